package gc

import (
	"errors"
	"slices"
	"testing"

	"github.com/sqlkube/sqlkube/server/controllers"
	"github.com/sqlkube/sqlkube/server/controllers/controllertest"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Before an owner's orphan or foregroundDeletion finalizer goes, storage confirms that the pass
// handled every dependent: one whose type's watch lags is found, indexed, and waited for, and so
// is one indexed while the pass ran (after it took the owner's dependents from the index).
func TestGarbageCollectorConfirmsDependentsFromStorage(t *testing.T) {
	deps := newTestDeps(t)
	owner := createIn(t, deps, "configmaps", "owner", nil)
	createIn(t, deps, "secrets", "dependent", []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.GetUID()}})
	createIn(t, deps, "configmaps", "unrelated", nil)

	lagging := newGarbageCollector(deps)
	handled := lagging.dependentsOf(owner.GetUID())
	if err := lagging.checkNoOtherDependents(t.Context(), owner.GetUID(), handled); !errors.Is(err, errUnhandledDependents) {
		t.Fatalf("with the dependent missing from the index: %v", err)
	}
	want := []sqlstore.Key{{Resource: "secrets", Namespace: "default", Name: "dependent"}}
	if got := lagging.dependentsOf(owner.GetUID()); !slices.Equal(got, want) {
		t.Fatalf("indexed dependents %v, want %v", got, want)
	}
	if err := lagging.checkNoOtherDependents(t.Context(), owner.GetUID(), handled); !errors.Is(err, errUnhandledDependents) {
		t.Fatalf("with the dependent indexed during the pass but not handled by it: %v", err)
	}
	if err := lagging.checkNoOtherDependents(t.Context(), owner.GetUID(), lagging.dependentsOf(owner.GetUID())); err != nil {
		t.Fatalf("once handled: %v", err)
	}
}

// newTestDeps are a catalog and a registry on a new SQLite store, until the test ends.
func newTestDeps(t *testing.T) controllers.Deps {
	return controllertest.New(t, sqltest.SQLiteDSN(t)).Deps
}

// createIn creates a core/v1 object of resource in the default namespace, through the registry.
func createIn(t *testing.T, deps controllers.Deps, resource, name string, owners []metav1.OwnerReference) *unstructured.Unstructured {
	t.Helper()
	res, _ := deps.Catalog.Lookup("", "v1", resource)
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetName(name)
	obj.SetOwnerReferences(owners)
	stored, _, err := deps.Registry.Create(t.Context(), registry.Ref{Resource: res, Namespace: "default"}, obj, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created, err := storedobj.DecodeStored(stored.Value)
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// TestMayConcernCollector: the pre-check lets through every object with ownerReferences or a
// deletionTimestamp, and skips the others.
func TestMayConcernCollector(t *testing.T) {
	for value, want := range map[string]bool{
		`{"metadata":{"name":"a","uid":"u"},"data":{"k":"v"}}`:                                    false,
		`{"metadata":{"name":"a","ownerReferences":[{"uid":"o"}]}}`:                               true,
		`{"metadata":{"name":"a","deletionTimestamp":"2026-11-22T00:00:00Z","finalizers":["x"]}}`: true,
		`{"metadata":{"name":"a"},"data":{"ownerReferences":"v"}}`:                                true, // decoded, harmlessly
	} {
		if got := MayConcernCollector([]byte(value)); got != want {
			t.Errorf("MayConcernCollector(%s) = %v, want %v", value, got, want)
		}
	}
}
