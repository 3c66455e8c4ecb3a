package namespace

import (
	"encoding/json"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sqlkube/sqlkube/server/controllers/controllertest"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// startController runs the namespace controller on env until the test ends, and creates the
// namespace demo; it returns demo as created.
func startController(t *testing.T, env *controllertest.Env) *unstructured.Unstructured {
	t.Helper()
	go Run(t.Context(), env.Deps, env.Resource("", "namespaces"))
	// As a client's Namespace reaches storage: with the name label kube's defaulting gives it,
	// which its manager then owns. (An object created with no field owned has its later updates'
	// managers untracked.)
	demo := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "demo", "labels": map[string]any{"kubernetes.io/metadata.name": "demo"}},
		"spec":     map[string]any{}, "status": map[string]any{}}}
	return env.Create(env.Ref("", "namespaces", "", ""), demo)
}

// in is ref's collection in demo, or the object name there.
func in(ref registry.Ref, name string) registry.Ref {
	ref.Namespace, ref.Name = "demo", name
	return ref
}

func waitNamespaceGone(t *testing.T, env *controllertest.Env) {
	t.Helper()
	controllertest.Eventually(t, "namespace demo is gone", func() bool {
		_, err := env.Get(env.Ref("", "namespaces", "", "demo"))
		return apierrors.IsNotFound(err)
	})
}

func TestNamespaceDeletionRemovesContent(t *testing.T) {
	controllertest.Backends(t, func(t *testing.T, env *controllertest.Env) {
		widgets := env.ServeWidgets()
		ns := startController(t, env)
		configMaps, secrets := env.Ref("", "configmaps", "", ""), env.Ref("", "secrets", "", "")
		env.CreateNamed(in(configMaps, ""), metav1.ObjectMeta{Name: "a"})
		env.CreateNamed(in(configMaps, ""), metav1.ObjectMeta{Name: "b"})
		env.CreateNamed(in(secrets, ""), metav1.ObjectMeta{Name: "s"})
		env.CreateNamed(in(widgets, ""), metav1.ObjectMeta{Name: "w"})
		events := controllertest.WatchAfter(t, env.Store, "namespaces", ns)

		env.Delete(env.Ref("", "namespaces", "", "demo"), "")
		waitNamespaceGone(t, env)
		for _, collection := range []registry.Ref{configMaps, secrets, widgets} {
			var left []string
			_, err := env.Registry.List(t.Context(), in(collection, ""), &internalversion.ListOptions{}, func(o sqlstore.Object) error {
				left = append(left, o.Key.Name)
				return nil
			})
			if err != nil || len(left) != 0 {
				t.Errorf("%s left in demo: %v %v", collection.Resource.Name, left, err)
			}
		}
		// The namespace's events: marked Terminating, its conditions set, then gone.
		got := controllertest.Receive(t, events, 3)
		if ops := []sqlstore.Op{got[0].Op, got[1].Op, got[2].Op}; !slices.Equal(ops, []sqlstore.Op{sqlstore.OpUpdate, sqlstore.OpUpdate, sqlstore.OpDelete}) {
			t.Fatalf("event ops %v", ops)
		}
		terminating := decodeNamespace(t, got[0].Object)
		if terminating.Status.Phase != corev1.NamespaceTerminating || terminating.DeletionTimestamp == nil || len(terminating.Status.Conditions) != 0 {
			t.Errorf("first event: %+v", terminating)
		}
		// The controller changed only the status conditions, recorded as its status update.
		conditioned := decodeNamespace(t, got[1].Object)
		wantNamespaceConditions(t, conditioned, nil)
		want := terminating.DeepCopy()
		want.ResourceVersion, want.Status.Conditions, want.ManagedFields = conditioned.ResourceVersion, conditioned.Status.Conditions, conditioned.ManagedFields
		if !apiequality.Semantic.DeepEqual(conditioned, want) {
			t.Fatalf("namespace with its deletion conditions\n got %+v\nwant %+v", conditioned, want)
		}
		if !slices.ContainsFunc(conditioned.ManagedFields, func(m metav1.ManagedFieldsEntry) bool {
			return m.Manager == "kube-controller-manager" && m.Operation == metav1.ManagedFieldsOperationUpdate && m.Subresource == "status"
		}) {
			t.Errorf("managedFields without the controller's status update: %+v", conditioned.ManagedFields)
		}
		wantNamespaceConditions(t, decodeNamespace(t, got[2].Object), nil)
	})
}

func TestNamespaceWaitsForFinalizers(t *testing.T) {
	controllertest.Backends(t, func(t *testing.T, env *controllertest.Env) {
		widgets := env.ServeWidgets()
		startController(t, env)
		configMaps := env.Ref("", "configmaps", "", "")
		env.CreateNamed(in(configMaps, ""), metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}})
		env.CreateNamed(in(configMaps, ""), metav1.ObjectMeta{Name: "free"})
		env.CreateNamed(in(widgets, ""), metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold", "example.com/other"}})
		env.Delete(env.Ref("", "namespaces", "", "demo"), "")
		var ns *corev1.Namespace
		controllertest.Eventually(t, "the namespace reports what holds it", func() bool {
			obj, err := env.Registry.Get(t.Context(), env.Ref("", "namespaces", "", "demo"), &metav1.GetOptions{})
			ns = decodeNamespace(t, obj)
			return err == nil && len(ns.Status.Conditions) > 0
		})
		wantNamespaceConditions(t, ns, []corev1.NamespaceCondition{
			{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue, Reason: "SomeResourcesRemain",
				Message: "Some resources are remaining: configmaps. has 1 resource instances, widgets.example.com has 1 resource instances"},
			{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionTrue, Reason: "SomeFinalizersRemain",
				Message: "Some content in the namespace has finalizers remaining: example.com/hold in 2 resource instances, example.com/other in 1 resource instances"},
		})
		if !slices.Equal(ns.Spec.Finalizers, []corev1.FinalizerName{"kubernetes"}) || ns.Status.Phase != corev1.NamespaceTerminating {
			t.Fatalf("namespace while content remains: %+v", ns)
		}
		if _, err := env.Get(in(configMaps, "free")); !apierrors.IsNotFound(err) {
			t.Fatalf("configmap without finalizers: %v", err)
		}
		held, err := env.Get(in(configMaps, "held"))
		if err != nil || held.GetDeletionTimestamp() == nil {
			t.Fatalf("held configmap: %v, %v", held, err)
		}

		// A second client finishes its work: the content goes, then the namespace.
		held.SetFinalizers(nil)
		if _, _, err := env.Registry.Update(t.Context(), in(configMaps, "held"), held, &metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := env.Registry.Patch(t.Context(), in(widgets, "held"), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), &metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitNamespaceGone(t, env)
	})
}

func decodeNamespace(t *testing.T, stored sqlstore.Object) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{}
	if err := json.Unmarshal(stored.Value, ns); err != nil {
		t.Fatalf("decoding namespace %s: %v", stored.Value, err)
	}
	return ns
}

// wantNamespaceConditions compares the namespace's deletion conditions, times aside: the
// failing ones given, the others in their all-is-well form.
func wantNamespaceConditions(t *testing.T, ns *corev1.Namespace, failing []corev1.NamespaceCondition) {
	t.Helper()
	want := []corev1.NamespaceCondition{
		{Type: corev1.NamespaceDeletionDiscoveryFailure, Status: corev1.ConditionFalse, Reason: "ResourcesDiscovered", Message: "All resources successfully discovered"},
		{Type: corev1.NamespaceDeletionGVParsingFailure, Status: corev1.ConditionFalse, Reason: "ParsedGroupVersions", Message: "All legacy kube types successfully parsed"},
		{Type: corev1.NamespaceDeletionContentFailure, Status: corev1.ConditionFalse, Reason: "ContentDeleted", Message: "All content successfully deleted, may be waiting on finalization"},
		{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionFalse, Reason: "ContentRemoved", Message: "All content successfully removed"},
		{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionFalse, Reason: "ContentHasNoFinalizers", Message: "All content-preserving finalizers finished"},
	}
	for _, f := range failing {
		want[slices.IndexFunc(want, func(c corev1.NamespaceCondition) bool { return c.Type == f.Type })] = f
	}
	got := slices.Clone(ns.Status.Conditions)
	for i := range got {
		if got[i].LastTransitionTime.IsZero() {
			t.Errorf("condition %s has no lastTransitionTime", got[i].Type)
		}
		got[i].LastTransitionTime = metav1.Time{}
	}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Fatalf("namespace conditions\n got %s\nwant %s", gotJSON, wantJSON)
	}
}
