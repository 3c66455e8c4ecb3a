package endpoints_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
)

// The rules of deletion, finalizers, namespaces, status and create-on-update are the registry's,
// tested in server/registry; these tests check what HTTP adds: routes, codes and list kinds.

func TestDeleteCollectionHTTP(t *testing.T) {
	api := sqliteAPI(t)
	api.createConfigMaps(t, "a", "b")
	resp := api.do("DELETE", cmPath+"?labelSelector=name+notin+(b)", "").expect(t, http.StatusOK)
	var l listed
	if err := json.Unmarshal(resp.body, &l); err != nil || l.Kind != "ConfigMapList" || !slices.Equal(l.names(), []string{"a"}) {
		t.Fatalf("deletecollection answered %s", resp.body)
	}
	// Namespaces have no deletecollection; a collection across namespaces is not deleted.
	api.do("DELETE", "/api/v1/namespaces", "").expect(t, http.StatusMethodNotAllowed)
	api.do("DELETE", "/api/v1/configmaps", "").expect(t, http.StatusMethodNotAllowed)
}

// A PUT that creates answers 201 Created, one that updates 200 OK.
func TestCreateOnUpdateHTTP(t *testing.T) {
	api := sqliteAPI(t)
	leases := "/apis/coordination.k8s.io/v1/namespaces/default/leases"
	created := api.do("PUT", leases+"/l", `{"metadata":{"name":"l"},"spec":{"holderIdentity":"a"}}`).expect(t, http.StatusCreated).object(t)
	if str(created, "kind") != "Lease" {
		t.Fatalf("lease created by PUT: %v", created)
	}
	api.do("PUT", leases+"/l", `{"metadata":{"name":"l","resourceVersion":"`+str(created, "metadata", "resourceVersion")+`"},"spec":{"holderIdentity":"b"}}`).expect(t, http.StatusOK)
}
