package registry_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// wantCreatedByKube fails unless the initial namespace ns is stored as kube-apiserver's system
// namespaces controller creates it: with its kind and apiVersion (kubectl refuses an object
// without: "Object 'Kind' is missing"), and its create's managedFields entry (the name label
// its decoding defaulted, recorded for kube-apiserver).
func wantCreatedByKube(t *testing.T, ns *unstructured.Unstructured) {
	t.Helper()
	if ns.GetKind() != "Namespace" || ns.GetAPIVersion() != "v1" {
		t.Errorf("%s: kind %q, apiVersion %q", ns.GetName(), ns.GetKind(), ns.GetAPIVersion())
	}
	managed := ns.GetManagedFields()
	if len(managed) != 1 || managed[0].Manager != "kube-apiserver" || managed[0].Operation != metav1.ManagedFieldsOperationUpdate ||
		managed[0].APIVersion != "v1" || string(managed[0].FieldsV1.Raw) != `{"f:metadata":{"f:labels":{".":{},"f:kubernetes.io/metadata.name":{}}}}` {
		t.Errorf("%s: managedFields %+v", ns.GetName(), managed)
	}
}

// TestInitialNamespaceKindRestoredAtStart: a database where an earlier sqlkube stored an
// initial namespace without its kind gets it back when a registry starts on it, as a new
// revision (watchers that cached the object without its kind get it again); the rest of the
// object is unchanged.
func TestInitialNamespaceKindRestoredAtStart(t *testing.T) {
	onBackends(t, func(t *testing.T, r *testRegistry) {
		before := r.mustGet("namespaces", "", "kube-public")
		delete(before.Object, "kind")
		before.SetManagedFields(nil)
		key := sqlstore.Key{Resource: "namespaces", Name: "kube-public"}
		current, err := r.store.Get(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		kindless, err := r.store.Write(t.Context(), sqlstore.Write{Op: sqlstore.OpUpdate, Key: key, ExpectedRevision: current.Revision,
			Render: func(rev int64) ([]byte, error) {
				before.SetResourceVersion(strconv.FormatInt(rev, 10))
				return json.Marshal(before.Object)
			}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := registry.New(t.Context(), r.store, r.types["namespaces"], registry.Options{RevisionWait: 300 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		after := r.mustGet("namespaces", "", "kube-public")
		if after.GetKind() != "Namespace" || after.GetResourceVersion() == strconv.FormatInt(kindless.Revision, 10) {
			t.Fatalf("after a start: kind %q at resourceVersion %s (kind-less at %d)", after.GetKind(), after.GetResourceVersion(), kindless.Revision)
		}
		delete(after.Object, "kind")
		after.SetResourceVersion(before.GetResourceVersion())
		if !equalJSON(t, after.Object, before.Object) {
			t.Fatalf("restored %v, was %v", after.Object, before.Object)
		}
	})
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}
