package endpoints_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const widgetCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"widgets.example.com"},
"spec":{"group":"example.com","scope":"Namespaced",
 "names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
 "versions":[
  {"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
   "selectableFields":[{"jsonPath":".spec.color"}],
   "additionalPrinterColumns":[{"name":"Color","type":"string","jsonPath":".spec.color"}],
   "schema":{"openAPIV3Schema":{"type":"object","properties":{
     "spec":{"type":"object","properties":{"color":{"type":"string"},"size":{"type":"integer","default":1}}},
     "status":{"type":"object","properties":{"ready":{"type":"boolean"}}}}}}},
  {"name":"v2","served":true,"storage":false,"subresources":{"status":{}},
   "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`

const widgets = "/apis/example.com/v1/namespaces/default/widgets"

func TestCustomResources(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgetCRD).expect(t, http.StatusCreated)

	resp := api.do("POST", widgets, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"red","extra":1},"status":{"ready":true}}`).expect(t, http.StatusCreated)
	w := resp.object(t)
	if nested(w, "metadata", "generation") != float64(1) || nested(w, "spec", "size") != float64(1) || nested(w, "spec", "extra") != nil || nested(w, "status") != nil {
		t.Fatalf("created widget: %v", w)
	}
	if got := resp.header.Values("Warning"); !slices.Equal(got, []string{`299 - "unknown field \"spec.extra\""`}) {
		t.Fatalf("warnings %q", got)
	}
	api.do("POST", widgets, `{"apiVersion":"example.com/v9","kind":"Widget","metadata":{"name":"v9"}}`).expectStatus(t, metav1.Status{
		Code: 400, Reason: metav1.StatusReasonBadRequest, Message: "the API version in the data (example.com/v9) does not match the expected API version (example.com/v1)"})
	api.do("POST", widgets+"?fieldValidation=Strict", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"strict"},"spec":{"extra":1}}`).expectStatus(t, metav1.Status{
		Code: 400, Reason: metav1.StatusReasonBadRequest, Message: `Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.extra"`})

	// Custom resources need a resourceVersion to be updated.
	api.do("PUT", widgets+"/w", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"blue"}}`).expectStatus(t, metav1.Status{
		Code: 422, Reason: metav1.StatusReasonInvalid, Message: `widgets.example.com "w" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`,
		Details: &metav1.StatusDetails{Name: "w", Group: "example.com", Kind: "widgets", Causes: []metav1.StatusCause{{
			Type: metav1.CauseTypeFieldValueInvalid, Message: "Invalid value: 0: must be specified for an update", Field: "metadata.resourceVersion"}}}})

	// The spec changes: generation moves; the status does not change through the main resource.
	rv := str(w, "metadata", "resourceVersion")
	w = api.do("PUT", widgets+"/w", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","resourceVersion":"`+rv+`"},"spec":{"color":"blue"},"status":{"ready":true}}`).expect(t, http.StatusOK).object(t)
	if nested(w, "metadata", "generation") != float64(2) || nested(w, "status") != nil {
		t.Fatalf("updated widget: %v", w)
	}
	rv = str(w, "metadata", "resourceVersion")
	w = api.do("PUT", widgets+"/w/status", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","resourceVersion":"`+rv+`"},"spec":{"color":"green"},"status":{"ready":true}}`).expect(t, http.StatusOK).object(t)
	if nested(w, "metadata", "generation") != float64(2) || nested(w, "status", "ready") != true || str(w, "spec", "color") != "blue" {
		t.Fatalf("status update: %v", w)
	}

	// Served in v2 from the same storage; the list items of custom resources keep their type.
	v2 := api.do("GET", "/apis/example.com/v2/namespaces/default/widgets/w", "").expect(t, http.StatusOK).object(t)
	if v2["apiVersion"] != "example.com/v2" {
		t.Fatalf("v2 get: %v", v2)
	}
	list := api.do("GET", "/apis/example.com/v2/namespaces/default/widgets", "").expect(t, http.StatusOK).object(t)
	if item := list["items"].([]any)[0].(map[string]any); item["apiVersion"] != "example.com/v2" || item["kind"] != "Widget" || list["kind"] != "WidgetList" {
		t.Fatalf("v2 list: %v", list)
	}

	// Selectable fields and printer columns.
	api.do("POST", widgets, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w2"},"spec":{"color":"red"}}`).expect(t, http.StatusCreated)
	if names := api.list(t, widgets+"?fieldSelector="+url.QueryEscape("spec.color=red")).names(); !slices.Equal(names, []string{"w2"}) {
		t.Fatalf("spec.color=red selected %v", names)
	}
	api.do("GET", widgets+"?fieldSelector=spec.size%3D1", "").expectStatus(t, metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest, Message: "field label not supported: spec.size"})
	var table metav1.Table
	_ = json.Unmarshal(api.do("GET", widgets, "", tableV1).expect(t, http.StatusOK).body, &table)
	if len(table.ColumnDefinitions) < 2 || table.ColumnDefinitions[1].Name != "Color" || len(table.Rows) != 2 || table.Rows[0].Cells[1] != "blue" {
		t.Fatalf("widget table: %+v", table)
	}
}
