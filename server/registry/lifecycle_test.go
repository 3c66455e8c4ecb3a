package registry_test

import (
	"net/http"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/sqlstore"
)

func TestFinalizersHoldDelete(t *testing.T) {
	onBackends(t, func(t *testing.T, r *testRegistry) {
		created := r.mustCreate("configmaps", "default", `{"metadata":{"name":"held","finalizers":["example.com/hold"]}}`)
		held := r.ref("configmaps", "default", "held")
		deleting, deleted := r.mustDelete(held, &metav1.DeleteOptions{})
		if deleted || deleting.GetDeletionTimestamp() == nil || deleting.GetDeletionGracePeriodSeconds() == nil || *deleting.GetDeletionGracePeriodSeconds() != 0 {
			t.Fatalf("delete of a held object answered deleted %v, %v", deleted, deleting.Object["metadata"])
		}
		if deleting.GetResourceVersion() == created.GetResourceVersion() {
			t.Fatal("marking for deletion wrote no revision")
		}
		// A second delete changes nothing.
		if again, _ := r.mustDelete(held, &metav1.DeleteOptions{}); again.GetResourceVersion() != deleting.GetResourceVersion() {
			t.Fatal("second delete wrote a revision")
		}
		// An update cannot clear the deletionTimestamp; emptying the finalizers deletes the object.
		r.mustUpdate(held, `{"metadata":{"name":"held","finalizers":[]}}`)
		_, err := r.get("configmaps", "default", "held")
		wantCode(t, err, http.StatusNotFound)
	})
}

func TestInitialNamespaces(t *testing.T) {
	onBackends(t, func(t *testing.T, r *testRegistry) {
		for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
			ns := r.mustGet("namespaces", "", name)
			phase, _, _ := unstructured.NestedString(ns.Object, "status", "phase")
			if phase != "Active" || ns.GetLabels()["kubernetes.io/metadata.name"] != name ||
				!reflect.DeepEqual(nestedStrings(ns, "spec", "finalizers"), []string{"kubernetes"}) {
				t.Fatalf("namespace %s: %v", name, ns)
			}
			wantCreatedByKube(t, ns)
		}
		// A second registry on the same database starts fine and creates nothing.
		before := r.revision()
		if _, err := registry.New(t.Context(), r.store, r.types["namespaces"], registry.Options{}); err != nil {
			t.Fatal(err)
		}
		if after := r.revision(); after != before {
			t.Fatalf("second start wrote revisions %d..%d", before, after)
		}
	})
}

func TestNamespaceDeleteAndFinalize(t *testing.T) {
	r := onSQLite(t)
	r.mustCreate("namespaces", "", `{"metadata":{"name":"gone"},"status":{"phase":"Terminating"}}`)
	r.mustCreate("configmaps", "gone", `{"metadata":{"name":"held","finalizers":["example.com/hold"]}}`)
	ns, deleted := r.mustDelete(r.ref("namespaces", "", "gone"), &metav1.DeleteOptions{})
	if phase, _, _ := unstructured.NestedString(ns.Object, "status", "phase"); deleted || phase != "Terminating" || ns.GetDeletionTimestamp() == nil {
		t.Fatalf("deleted namespace (gone %v): %v", deleted, ns)
	}
	finalize := r.ref("namespaces", "", "gone")
	finalize.Subresource = "finalize"
	r.mustUpdate(finalize, `{"metadata":{"name":"gone"},"spec":{"finalizers":[]}}`)
	_, err := r.get("namespaces", "", "gone")
	wantCode(t, err, http.StatusNotFound)
}

func TestStatusSubresource(t *testing.T) {
	r := onSQLite(t)
	r.mustCreate("namespaces", "", `{"metadata":{"name":"st"}}`)
	// The main resource cannot change the status; /status cannot change the spec, and keeps
	// the request's metadata, as kube's namespace status strategy does.
	main := r.ref("namespaces", "", "st")
	r.mustUpdate(main, `{"metadata":{"name":"st","labels":{"a":"b"}},"status":{"phase":"Other"}}`)
	status := main
	status.Subresource = "status"
	ns := r.mustUpdate(status, `{"metadata":{"name":"st","labels":{"c":"d"}},"spec":{"finalizers":[]},"status":{"phase":"Active","conditions":[{"type":"Custom","status":"True"}]}}`)
	conditions, _, _ := unstructured.NestedSlice(ns.Object, "status", "conditions")
	phase, _, _ := unstructured.NestedString(ns.Object, "status", "phase")
	if phase != "Active" || len(conditions) != 1 || ns.GetLabels()["a"] != "" || ns.GetLabels()["c"] != "d" ||
		ns.GetLabels()["kubernetes.io/metadata.name"] != "st" || len(nestedStrings(ns, "spec", "finalizers")) != 1 {
		t.Fatalf("after status update: %v", ns)
	}
	// A phase that does not fit the namespace's state is refused, as kube-apiserver refuses it.
	_, _, err := r.update(status, `{"metadata":{"name":"st"},"status":{"phase":"Other"}}`)
	wantCode(t, err, http.StatusUnprocessableEntity)
}

func TestDeleteCollection(t *testing.T) {
	r := onSQLite(t)
	for _, name := range []string{"a", "b", "c"} {
		r.mustCreate("configmaps", "default", `{"metadata":{"name":"`+name+`","labels":{"name":"`+name+`"}}}`)
	}
	r.mustCreate("configmaps", "default", `{"metadata":{"name":"held","labels":{"name":"held"},"finalizers":["example.com/x"]}}`)
	selector, err := labels.Parse("name notin (b)")
	if err != nil {
		t.Fatal(err)
	}
	var answered []string
	collection := r.ref("configmaps", "default", "")
	_, err = r.reg.DeleteCollection(t.Context(), collection, &internalversion.ListOptions{LabelSelector: selector}, &metav1.DeleteOptions{},
		func(o sqlstore.Object) error {
			answered = append(answered, o.Key.Name)
			return nil
		})
	if err != nil || !slices.Equal(answered, []string{"a", "c", "held"}) {
		t.Fatalf("deletecollection answered %v, %v", answered, err)
	}
	if left := r.names(collection); !slices.Equal(left, []string{"b", "held"}) {
		t.Fatalf("left %v", left)
	}
}

// names lists the names in ref's collection.
func (r *testRegistry) names(ref registry.Ref) []string {
	r.t.Helper()
	var names []string
	if _, err := r.reg.List(r.t.Context(), ref, &internalversion.ListOptions{}, func(o sqlstore.Object) error {
		names = append(names, o.Key.Name)
		return nil
	}); err != nil {
		r.t.Fatal(err)
	}
	return names
}

func TestCreateOnUpdate(t *testing.T) {
	r := onSQLite(t)
	lease := r.ref("leases.coordination.k8s.io", "default", "l")
	created, isNew, err := r.update(lease, `{"metadata":{"name":"l"},"spec":{"holderIdentity":"a"}}`)
	if err != nil || !isNew || created.GetUID() == "" {
		t.Fatalf("lease created by update: %v (created %v), %v", created, isNew, err)
	}
	// Leases need a resourceVersion to be updated; config maps are not created by update.
	_, _, err = r.update(lease, `{"metadata":{"name":"l"},"spec":{"holderIdentity":"b"}}`)
	wantCode(t, err, http.StatusUnprocessableEntity)
	if _, isNew, err := r.update(lease, `{"metadata":{"name":"l","resourceVersion":"`+created.GetResourceVersion()+`"},"spec":{"holderIdentity":"b"}}`); err != nil || isNew {
		t.Fatalf("update with a resourceVersion: created %v, %v", isNew, err)
	}
	_, _, err = r.update(r.ref("configmaps", "default", "new"), `{"metadata":{"name":"new"}}`)
	wantCode(t, err, http.StatusNotFound)
}

// A namespace keeps the finalizers it is created with, and always gets "kubernetes"; finalizer
// names are validated as kube-apiserver validates them.
func TestNamespaceCreateFinalizers(t *testing.T) {
	r := onSQLite(t)
	ns := r.mustCreate("namespaces", "", `{"metadata":{"name":"fin"},"spec":{"finalizers":["example.com/x"]}}`)
	if got := nestedStrings(ns, "spec", "finalizers"); !slices.Equal(got, []string{"example.com/x", "kubernetes"}) {
		t.Errorf("spec.finalizers = %v, want [example.com/x kubernetes]", got)
	}
	_, err := r.create("namespaces", "", `{"metadata":{"name":"bad"},"spec":{"finalizers":["custom"]}}`)
	wantCode(t, err, http.StatusUnprocessableEntity)
}

// A delete's propagationPolicy sets the garbage collector's finalizers, as kube-apiserver's
// store does, even on an object already being deleted; a dry run only shows them. (That the
// collector then removes the orphan finalizer is tested with the collector.)
func TestDeletePropagationFinalizers(t *testing.T) {
	r := onSQLite(t)
	r.mustCreate("configmaps", "default", `{"metadata":{"name":"held","finalizers":["example.com/hold"]}}`)
	held := r.ref("configmaps", "default", "held")
	foreground, orphan := metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan

	dry, _ := r.mustDelete(held, &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}, PropagationPolicy: &foreground})
	if !slices.Equal(dry.GetFinalizers(), []string{"example.com/hold", "foregroundDeletion"}) {
		t.Fatalf("dry-run delete answered %v", dry)
	}
	if stored := r.mustGet("configmaps", "default", "held"); !slices.Equal(stored.GetFinalizers(), []string{"example.com/hold"}) || stored.GetDeletionTimestamp() != nil {
		t.Fatalf("after a dry run: %v", stored)
	}

	first, _ := r.mustDelete(held, &metav1.DeleteOptions{})
	second, _ := r.mustDelete(held, &metav1.DeleteOptions{PropagationPolicy: &orphan})
	if !slices.Equal(first.GetFinalizers(), []string{"example.com/hold"}) || !slices.Equal(second.GetFinalizers(), []string{"example.com/hold", "orphan"}) {
		t.Fatalf("finalizers after deletes without policy then with Orphan: %v, %v", first.GetFinalizers(), second.GetFinalizers())
	}
	if !second.GetDeletionTimestamp().Equal(first.GetDeletionTimestamp()) {
		t.Fatalf("a repeated delete moved deletionTimestamp: %v, then %v", first, second)
	}
}

// A namespace being deleted takes no new content.
func TestNamespaceTerminatingRefusesContent(t *testing.T) {
	r := onSQLite(t)
	r.mustCreate("namespaces", "", `{"metadata":{"name":"demo"}}`)
	r.mustCreate("configmaps", "demo", `{"metadata":{"name":"held","finalizers":["example.com/hold"]}}`)
	r.mustDelete(r.ref("namespaces", "", "demo"), &metav1.DeleteOptions{})
	_, err := r.create("configmaps", "demo", `{"metadata":{"name":"new"}}`)
	wantStatus(t, err, metav1.Status{Status: metav1.StatusFailure,
		Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
		Message: `configmaps "new" is forbidden: unable to create new content in namespace demo because it is being terminated`,
		Details: &metav1.StatusDetails{Name: "new", Kind: "configmaps",
			Causes: []metav1.StatusCause{{Type: "NamespaceTerminating", Message: "namespace demo is being terminated", Field: "metadata.namespace"}}},
	})
}
