package endpoints_test

import (
	"net/http"
	"testing"

	"github.com/sqlkube/sqlkube/server/endpoints"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// gadgetCRD has no default yet; the test adds one to spec.size.
const gadgetCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"gadgets.example.com"},
"spec":{"group":"example.com","scope":"Namespaced",
 "names":{"plural":"gadgets","singular":"gadget","kind":"Gadget","listKind":"GadgetList"},
 "versions":[{"name":"v1","served":true,"storage":true,
   "selectableFields":[{"jsonPath":".spec.size"}],
   "schema":{"openAPIV3Schema":{"type":"object","properties":{
     "spec":{"type":"object","properties":{"size":{"type":"integer"}}}}}}}]}}`

const gadgets = "/apis/example.com/v1/namespaces/default/gadgets"

// An object stored before its schema had a default reads with the default, through get, list
// (field selectors included) and watch, as kube-apiserver's storage decoder defaults what it reads.
func TestDefaultsAppliedOnRead(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", gadgetCRD).expect(t, http.StatusCreated)
		created := api.do("POST", gadgets, `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g"},"spec":{}}`).expect(t, http.StatusCreated).object(t)
		if nested(created, "spec", "size") != nil {
			t.Fatalf("created before the default: %v", created)
		}
		api.do("PATCH", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com",
			`[{"op":"add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/size/default","value":3}]`,
			"Content-Type: application/json-patch+json").expect(t, http.StatusOK)

		got := api.do("GET", gadgets+"/g", "").expect(t, http.StatusOK).object(t)
		if nested(got, "spec", "size") != float64(3) {
			t.Fatalf("get: %v", got)
		}
		list := api.do("GET", gadgets, "").expect(t, http.StatusOK).object(t)
		if item := list["items"].([]any)[0].(map[string]any); nested(item, "spec", "size") != float64(3) {
			t.Fatalf("list item: %v", item)
		}
		if names := api.list(t, gadgets+"?fieldSelector=spec.size%3D3").names(); len(names) != 1 || names[0] != "g" {
			t.Fatalf("spec.size=3 selected %v", names)
		}
		ev := api.watch(gadgets + "?watch=1").next()
		if o := ev.object(t); ev.Type != "ADDED" || nested(o, "spec", "size") != float64(3) {
			t.Fatalf("watch event %s: %v", ev.Type, o)
		}
		// The stored bytes keep no default: it is the read that adds it.
		stored, _ := readObject(t, api.store, sqlstore.Key{Resource: api.exampleResource(t, "gadgets").StorageName, Namespace: "default", Name: "g"})
		if _, found := stored.Object["spec"].(map[string]any)["size"]; found {
			t.Fatalf("stored object changed: %v", stored.Object)
		}
	})
}

// exampleResource finds an example.com/v1 resource the test's CRD serves.
func (a *testAPI) exampleResource(t *testing.T, name string) *resource.Resource {
	t.Helper()
	return mustLookup(t, endpoints.CatalogOf(a.server), "example.com", "v1", name)
}

// doodadCRD serves v1 (storage) and v2, whose schemas differ; v1 has no default yet.
const doodadCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"doodads.example.com"},
"spec":{"group":"example.com","scope":"Namespaced",
 "names":{"plural":"doodads","singular":"doodad","kind":"Doodad","listKind":"DoodadList"},
 "versions":[
  {"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
    "spec":{"type":"object","properties":{"size":{"type":"integer"},"legacy":{"type":"string"}}}}}}},
  {"name":"v2","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","properties":{
    "spec":{"type":"object","properties":{"size":{"type":"integer"},"shiny":{"type":"boolean","default":true}}}}}}}]}}`

// Reads default with the storage version's schema, then prune with the schema of the version
// served, as kube-apiserver's storage decoder and converter do.
func TestReadThroughAnotherVersion(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", doodadCRD).expect(t, http.StatusCreated)
	api.do("POST", "/apis/example.com/v1/namespaces/default/doodads", `{"apiVersion":"example.com/v1","kind":"Doodad","metadata":{"name":"d"},"spec":{"legacy":"x"}}`).expect(t, http.StatusCreated)
	api.do("PATCH", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/doodads.example.com",
		`[{"op":"add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/size/default","value":2}]`,
		"Content-Type: application/json-patch+json").expect(t, http.StatusOK)

	for version, want := range map[string]map[string]any{
		"v1": {"size": float64(2), "legacy": "x"},
		"v2": {"size": float64(2)},
	} {
		got := api.do("GET", "/apis/example.com/"+version+"/namespaces/default/doodads/d", "").expect(t, http.StatusOK).object(t)
		if !equalJSON(got["spec"], want) || got["apiVersion"] != "example.com/"+version {
			t.Errorf("read through %s: %v, want spec %v", version, got, want)
		}
	}

	// Written through v2, an object loses what v1, the storage version, does not have.
	created := api.do("POST", "/apis/example.com/v2/namespaces/default/doodads", `{"apiVersion":"example.com/v2","kind":"Doodad","metadata":{"name":"d2"},"spec":{"size":5,"shiny":false}}`).expect(t, http.StatusCreated).object(t)
	stored, _ := readObject(t, api.store, sqlstore.Key{Resource: api.exampleResource(t, "doodads").StorageName, Namespace: "default", Name: "d2"})
	if !equalJSON(created["spec"], map[string]any{"size": 5}) || !equalJSON(stored.Object["spec"], map[string]any{"size": 5}) {
		t.Errorf("created through v2: answered %v, stored %v", created["spec"], stored.Object["spec"])
	}
}
