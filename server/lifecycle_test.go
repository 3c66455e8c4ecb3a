package server

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"testing"
)

func TestFinalizersHoldDelete(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		created := api.do("POST", cmPath, `{"metadata":{"name":"held","finalizers":["example.com/hold"]}}`).expect(t, http.StatusCreated).object(t)
		deleting := api.do("DELETE", cmPath+"/held", "").expect(t, http.StatusOK).object(t)
		if str(deleting, "metadata", "deletionTimestamp") == "" || nested(deleting, "metadata", "deletionGracePeriodSeconds") != float64(0) {
			t.Fatalf("delete of a held object returned %v", deleting["metadata"])
		}
		if str(deleting, "metadata", "resourceVersion") == str(created, "metadata", "resourceVersion") {
			t.Fatal("marking for deletion wrote no revision")
		}
		// A second delete changes nothing.
		again := api.do("DELETE", cmPath+"/held", "").expect(t, http.StatusOK).object(t)
		if str(again, "metadata", "resourceVersion") != str(deleting, "metadata", "resourceVersion") {
			t.Fatal("second delete wrote a revision")
		}
		// An update cannot clear the deletionTimestamp; emptying the finalizers deletes the object.
		api.do("PUT", cmPath+"/held", `{"metadata":{"name":"held","finalizers":[]}}`).expect(t, http.StatusOK)
		api.do("GET", cmPath+"/held", "").expect(t, http.StatusNotFound)
	})
}

func TestInitialNamespaces(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
			ns := api.do("GET", "/api/v1/namespaces/"+name, "").expect(t, http.StatusOK).object(t)
			if str(ns, "status", "phase") != "Active" || str(ns, "metadata", "labels", "kubernetes.io/metadata.name") != name ||
				!reflect.DeepEqual(nested(ns, "spec", "finalizers"), []any{"kubernetes"}) {
				t.Fatalf("namespace %s: %v", name, ns)
			}
		}
		// A second server on the same database starts fine and creates nothing.
		before, _ := api.store.CurrentRevision(t.Context())
		if _, err := New(t.Context(), api.store, Options{NoDefaultObjects: true}); err != nil {
			t.Fatal(err)
		}
		if after, _ := api.store.CurrentRevision(t.Context()); after != before {
			t.Fatalf("second start wrote revisions %d..%d", before, after)
		}
	})
}

func TestNamespaceDeleteAndFinalize(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"gone"},"status":{"phase":"Terminating"}}`).expect(t, http.StatusCreated)
	// Content held by a finalizer keeps the namespace controller from finalizing it first.
	api.do("POST", "/api/v1/namespaces/gone/configmaps", `{"metadata":{"name":"held","finalizers":["example.com/hold"]}}`).expect(t, http.StatusCreated)
	ns := api.do("DELETE", "/api/v1/namespaces/gone", "").expect(t, http.StatusOK).object(t)
	if str(ns, "status", "phase") != "Terminating" || str(ns, "metadata", "deletionTimestamp") == "" {
		t.Fatalf("deleted namespace: %v", ns)
	}
	api.do("PUT", "/api/v1/namespaces/gone/finalize", `{"metadata":{"name":"gone"},"spec":{"finalizers":[]}}`).expect(t, http.StatusOK)
	api.do("GET", "/api/v1/namespaces/gone", "").expect(t, http.StatusNotFound)
}

func TestStatusSubresource(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"st"}}`).expect(t, http.StatusCreated)
	// The main resource cannot change the status; /status changes only the status.
	api.do("PUT", "/api/v1/namespaces/st", `{"metadata":{"name":"st","labels":{"a":"b"}},"status":{"phase":"Other"}}`).expect(t, http.StatusOK)
	ns := api.do("PUT", "/api/v1/namespaces/st/status",
		`{"metadata":{"name":"st","labels":{"c":"d"}},"status":{"phase":"Active","conditions":[{"type":"Custom","status":"True"}]}}`).expect(t, http.StatusOK).object(t)
	conditions, _ := nested(ns, "status", "conditions").([]any)
	if str(ns, "status", "phase") != "Active" || len(conditions) != 1 || str(ns, "metadata", "labels", "a") != "b" || str(ns, "metadata", "labels", "c") != "" {
		t.Fatalf("after status update: %v", ns)
	}
	// A phase that does not fit the namespace's state is refused, as kube-apiserver refuses it.
	api.do("PUT", "/api/v1/namespaces/st/status", `{"metadata":{"name":"st"},"status":{"phase":"Other"}}`).expect(t, http.StatusUnprocessableEntity)
}

func TestDeleteCollection(t *testing.T) {
	api := sqliteAPI(t)
	api.createConfigMaps(t, "a", "b", "c")
	api.do("POST", cmPath, `{"metadata":{"name":"held","labels":{"name":"held"},"finalizers":["example.com/x"]}}`).expect(t, http.StatusCreated)
	resp := api.do("DELETE", cmPath+"?labelSelector=name+notin+(b)", "").expect(t, http.StatusOK)
	var l listed
	if err := json.Unmarshal(resp.body, &l); err != nil || l.Kind != "ConfigMapList" || !slices.Equal(l.names(), []string{"a", "c", "held"}) {
		t.Fatalf("deletecollection answered %s", resp.body)
	}
	if names := api.list(t, cmPath).names(); !slices.Equal(names, []string{"b", "held"}) {
		t.Fatalf("left %v", names)
	}
	api.do("DELETE", "/api/v1/namespaces", "").expect(t, http.StatusMethodNotAllowed)
	api.do("DELETE", "/api/v1/configmaps", "").expect(t, http.StatusMethodNotAllowed)
}

func TestCreateOnUpdate(t *testing.T) {
	api := sqliteAPI(t)
	leases := "/apis/coordination.k8s.io/v1/namespaces/default/leases"
	created := api.do("PUT", leases+"/l", `{"metadata":{"name":"l"},"spec":{"holderIdentity":"a"}}`).expect(t, http.StatusCreated).object(t)
	if str(created, "metadata", "uid") == "" || str(created, "kind") != "Lease" {
		t.Fatalf("lease created by PUT: %v", created)
	}
	// Leases need a resourceVersion to be updated; config maps are not created by PUT.
	api.do("PUT", leases+"/l", `{"metadata":{"name":"l"},"spec":{"holderIdentity":"b"}}`).expect(t, http.StatusUnprocessableEntity)
	api.do("PUT", leases+"/l", `{"metadata":{"name":"l","resourceVersion":"`+str(created, "metadata", "resourceVersion")+`"},"spec":{"holderIdentity":"b"}}`).expect(t, http.StatusOK)
	api.do("PUT", cmPath+"/new", `{"metadata":{"name":"new"}}`).expect(t, http.StatusNotFound)
}

// A namespace keeps the finalizers it is created with, and always gets "kubernetes"; finalizer
// names are validated as kube-apiserver validates them.
func TestNamespaceCreateFinalizers(t *testing.T) {
	api := sqliteAPI(t)
	ns := api.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"fin"},"spec":{"finalizers":["example.com/x"]}}`).expect(t, http.StatusCreated).object(t)
	if got := anyStrings(nested(ns, "spec", "finalizers")); !slices.Equal(got, []string{"example.com/x", "kubernetes"}) {
		t.Errorf("spec.finalizers = %v, want [example.com/x kubernetes]", got)
	}
	api.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"bad"},"spec":{"finalizers":["custom"]}}`).expect(t, http.StatusUnprocessableEntity)
}
