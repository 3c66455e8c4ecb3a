package flowcontrol

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/controllers/controllertest"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// names lists the stored objects of the flowcontrol resource.
func names(t *testing.T, env *controllertest.Env, resource string) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	if _, err := env.Registry.List(t.Context(), env.Ref(builtin.FlowControlGroup, resource, "", ""), &internalversion.ListOptions{}, func(o sqlstore.Object) error {
		got[o.Key.Name] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// Run writes kube's mandatory and suggested objects, auto-updated, as kube-apiserver's writer;
// a second run (another replica) finds them and changes nothing, not even an object an operator
// changed.
func TestBootstrapWritesKubesConfiguration(t *testing.T) {
	controllertest.Backends(t, func(t *testing.T, env *controllertest.Env) {
		b := NewBootstrap(env.Deps, true)
		if b.Done() {
			t.Fatal("done before running")
		}
		if err := b.Run(t.Context()); err != nil || !b.Done() {
			t.Fatalf("Run: %v, done %v", err, b.Done())
		}
		levels, schemas := names(t, env, "prioritylevelconfigurations"), names(t, env, "flowschemas")
		for _, pl := range append(bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations...) {
			if !levels[pl.Name] {
				t.Errorf("priority level %s not written", pl.Name)
			}
		}
		for _, fs := range append(bootstrap.MandatoryFlowSchemas, bootstrap.SuggestedFlowSchemas...) {
			if !schemas[fs.Name] {
				t.Errorf("flow schema %s not written", fs.Name)
			}
		}
		exempt, err := env.Get(env.Ref(builtin.FlowControlGroup, "flowschemas", "", "exempt"))
		if err != nil || exempt.GetAnnotations()[autoUpdateAnnotation] != "true" || len(exempt.GetManagedFields()) != 1 || exempt.GetManagedFields()[0].Manager != fieldManager {
			t.Fatalf("exempt flow schema: %v, %v", exempt, err)
		}

		exempt.SetAnnotations(map[string]string{autoUpdateAnnotation: "false"})
		if _, _, err := env.Registry.Update(t.Context(), env.Ref(builtin.FlowControlGroup, "flowschemas", "", "exempt"), exempt, &metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		before, _ := env.Store.CurrentRevision(t.Context())
		if err := NewBootstrap(env.Deps, true).Run(t.Context()); err != nil {
			t.Fatalf("second Run: %v", err)
		}
		if after, _ := env.Store.CurrentRevision(t.Context()); after != before {
			t.Fatalf("second run wrote revisions %d..%d", before, after)
		}
	})
}

// Without suggested objects nothing is written, and the writer is done at once.
func TestBootstrapWithoutSuggestedWritesNothing(t *testing.T) {
	env := controllertest.New(t, sqltest.SQLiteDSN(t))
	before, _ := env.Store.CurrentRevision(t.Context())
	b := NewBootstrap(env.Deps, false)
	if err := b.Run(t.Context()); err != nil || !b.Done() {
		t.Fatalf("Run: %v, done %v", err, b.Done())
	}
	if after, _ := env.Store.CurrentRevision(t.Context()); after != before {
		t.Fatalf("wrote revisions %d..%d", before, after)
	}
}
