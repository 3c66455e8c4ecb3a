package endpoints_test

import (
	"net/http"
	"testing"
)

// TestCustomResourceListMetadata: as apiextensions-apiserver answers, a delete collection lists
// the objects as they were before deletion with the list's resourceVersion, and a complete list
// of custom resources carries continue "" (its unstructured list always has the field).
func TestCustomResourceListMetadata(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgetCRD).expect(t, http.StatusCreated)
	created := map[string]string{}
	for _, name := range []string{"a", "b"} {
		w := api.do("POST", widgets, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"`+name+`","labels":{"x":"y"}}}`).expect(t, http.StatusCreated).object(t)
		created[name] = str(w, "metadata", "resourceVersion")
	}
	list := api.do("GET", widgets, "").expect(t, http.StatusOK).object(t)
	if c, ok := nested(list, "metadata", "continue").(string); !ok || c != "" {
		t.Fatalf("list metadata %v, want continue \"\"", list["metadata"])
	}
	deleted := api.do("DELETE", widgets+"?labelSelector=x%3Dy", "").expect(t, http.StatusOK).object(t)
	items, _ := deleted["items"].([]any)
	if len(items) != 2 {
		t.Fatalf("delete collection answered %d items: %v", len(items), deleted)
	}
	for _, item := range items {
		m := item.(map[string]any)
		name := str(m, "metadata", "name")
		if rv := str(m, "metadata", "resourceVersion"); rv != created[name] {
			t.Errorf("%s: resourceVersion %s, want %s as listed before deletion", name, rv, created[name])
		}
	}
	if str(deleted, "metadata", "resourceVersion") == "" || nested(deleted, "metadata", "continue") != "" {
		t.Errorf("delete collection list metadata %v", deleted["metadata"])
	}
	api.do("GET", widgets+"/a", "").expect(t, http.StatusNotFound)
}
