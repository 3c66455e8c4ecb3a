package endpoints_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	jsonPatch      = "Content-Type: application/json-patch+json"
	mergePatch     = "Content-Type: application/merge-patch+json"
	strategicPatch = "Content-Type: application/strategic-merge-patch+json"
	applyPatch     = "Content-Type: application/apply-patch+yaml"
)

// expectField fails unless the object's field at path equals want (as decoded from JSON).
func expectField(t *testing.T, obj map[string]any, want any, path ...string) {
	t.Helper()
	if got := nested(obj, path...); !reflect.DeepEqual(got, want) {
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(want)
		t.Fatalf("%v = %s, want %s", path, gotJSON, wantJSON)
	}
}

// currentRevision is the store's revision, to show a request wrote nothing.
func (a *testAPI) currentRevision(t *testing.T) int64 {
	t.Helper()
	rev, err := a.store.CurrentRevision(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// TestPatchErrors checks the answers to bad patches, none of which changes anything.
func TestPatchErrors(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", cmPath, `{"metadata":{"name":"p"},"data":{"a":"1"}}`).expect(t, http.StatusCreated)
	before := api.currentRevision(t)
	invalid := metav1.Status{Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
		Message: "the server rejected our request due to an error in our request", Details: &metav1.StatusDetails{}}
	badRequest := func(message string) metav1.Status {
		return metav1.Status{Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest, Message: message}
	}
	for _, tc := range []struct {
		name, path, body, contentType string
		want                          metav1.Status
	}{
		{"unknown patch type", cmPath + "/p", `{}`, "Content-Type: application/json", metav1.Status{
			Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
			Message: "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"}},
		{"json patch test fails", cmPath + "/p", `[{"op":"test","path":"/data/a","value":"2"},{"op":"add","path":"/data/b","value":"2"}]`, jsonPatch, invalid},
		{"json patch removes a missing key", cmPath + "/p", `[{"op":"remove","path":"/data/zz"}]`, jsonPatch, invalid},
		{"json patch with a pointer that is no pointer", cmPath + "/p", `[{"op":"add","path":"data","value":"x"}]`, jsonPatch, invalid},
		{"json patch of an unknown operation", cmPath + "/p", `[{"op":"frobnicate","path":"/data/a"}]`, jsonPatch, invalid},
		{"json patch that is an object", cmPath + "/p", `{"op":"add"}`, jsonPatch, badRequest("error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp")},
		{"json patch of too many operations", cmPath + "/p", "[" + strings.Repeat(`{"op":"test","path":"/data/a","value":"1"},`, 10000) + `{"op":"test","path":"/data/a","value":"1"}]`, jsonPatch, metav1.Status{
			Code: http.StatusRequestEntityTooLarge, Reason: metav1.StatusReasonRequestEntityTooLarge,
			Message: "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"}},
		{"invalid JSON", cmPath + "/p", `{"data":`, mergePatch, badRequest("invalid JSON patch")},
		{"merge patch that is a list", cmPath + "/p", `[1]`, mergePatch, badRequest("error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}")},
		{"renaming", cmPath + "/p", `{"metadata":{"name":"q"}}`, mergePatch, badRequest("the name of the object (q) does not match the name on the URL (p)")},
		{"moving", cmPath + "/p", `{"metadata":{"namespace":"other"}}`, mergePatch, badRequest("the namespace of the provided object does not match the namespace sent on the request")},
		{"value of the wrong type", cmPath + "/p", `{"data":{"a":1}}`, strategicPatch, metav1.Status{
			Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
			Message: ` "" is invalid: patch: Invalid value: "map[data:map[a:1]]": cannot convert int64 to string`,
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "patch",
				Message: `Invalid value: "map[data:map[a:1]]": cannot convert int64 to string`}}}}},
		{"unknown field under Strict", cmPath + "/p?fieldValidation=Strict", `{"foo":1}`, strategicPatch, metav1.Status{
			Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
			Message: ` "" is invalid: patch: Invalid value: "map[foo:1]": strict decoding error: unknown field "foo"`,
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "patch",
				Message: `Invalid value: "map[foo:1]": strict decoding error: unknown field "foo"`}}}}},
		{"force without apply", cmPath + "/p?force=true", `{}`, mergePatch, metav1.Status{
			Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
			Message: `PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch`,
			Details: &metav1.StatusDetails{Group: "meta.k8s.io", Kind: "PatchOptions", Causes: []metav1.StatusCause{{
				Type: metav1.CauseType(field.ErrorTypeForbidden), Message: "Forbidden: may not be specified for non-apply patch", Field: "force"}}}}},
		{"apply without a field manager", cmPath + "/p", "data: {}", applyPatch, metav1.Status{
			Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
			Message: `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`,
			Details: &metav1.StatusDetails{Group: "meta.k8s.io", Kind: "PatchOptions", Causes: []metav1.StatusCause{{
				Type: metav1.CauseTypeFieldValueRequired, Message: "Required value: is required for apply patch", Field: "fieldManager"}}}}},
		{"apply of a list", cmPath + "/p?fieldManager=m", "- a\n", applyPatch, badRequest(
			"error decoding patch: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}")},
		{"apply of invalid YAML", cmPath + "/p?fieldManager=m", "{{{", applyPatch, badRequest(
			"error decoding patch: error converting YAML to JSON: yaml: line 1: did not find expected node content")},
		{"apply of another kind", cmPath + "/p?fieldManager=m", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: p\n", applyPatch, badRequest(
			"invalid object type: /v1, Kind=Secret")},
		{"patch of a missing object", cmPath + "/missing", `{}`, mergePatch, metav1.Status{Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
			Message: `configmaps "missing" not found`, Details: &metav1.StatusDetails{Name: "missing", Kind: "configmaps"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api.do("PATCH", tc.path, tc.body, tc.contentType).expectStatus(t, tc.want)
		})
	}
	if after := api.currentRevision(t); after != before {
		t.Fatalf("bad patches wrote revisions %d..%d", before, after)
	}
}

func TestPatchCustomResource(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgetCRD).expect(t, http.StatusCreated)
		api.do("POST", widgets, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"red"}}`).expect(t, http.StatusCreated)

		// Patches of the spec move the generation; the status only changes through /status.
		got := api.do("PATCH", widgets+"/w", `{"spec":{"color":"blue"},"status":{"ready":true}}`, mergePatch).expect(t, http.StatusOK).object(t)
		expectField(t, got, map[string]any{"color": "blue", "size": float64(1)}, "spec")
		expectField(t, got, float64(2), "metadata", "generation")
		expectField(t, got, nil, "status")
		got = api.do("PATCH", widgets+"/w/status", `[{"op":"add","path":"/status","value":{"ready":true}},{"op":"replace","path":"/spec/color","value":"green"}]`, jsonPatch).expect(t, http.StatusOK).object(t)
		expectField(t, got, true, "status", "ready")
		expectField(t, got, "blue", "spec", "color")
		expectField(t, got, float64(2), "metadata", "generation")

		// Custom resources are only updated at a given resourceVersion: a patch cannot remove it.
		api.do("PATCH", widgets+"/w", `{"metadata":{"resourceVersion":null},"spec":{"color":"red"}}`, mergePatch).expectStatus(t, metav1.Status{
			Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
			Message: `widgets.example.com "w" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`,
			Details: &metav1.StatusDetails{Name: "w", Group: "example.com", Kind: "widgets", Causes: []metav1.StatusCause{{
				Type: metav1.CauseTypeFieldValueInvalid, Message: "Invalid value: 0: must be specified for an update", Field: "metadata.resourceVersion"}}}})

		// Unknown fields are pruned with a warning, or rejected under Strict.
		resp := api.do("PATCH", widgets+"/w", `{"spec":{"extra":1}}`, mergePatch).expect(t, http.StatusOK)
		if warnings := resp.header.Values("Warning"); !slices.Equal(warnings, []string{`299 - "unknown field \"spec.extra\""`}) {
			t.Fatalf("warnings %q", warnings)
		}
		expectField(t, resp.object(t), nil, "spec", "extra")
		api.do("PATCH", widgets+"/w?fieldValidation=Strict", `[{"op":"add","path":"/spec/extra","value":1}]`, jsonPatch).expect(t, http.StatusUnprocessableEntity)

		// A patch to another apiVersion is decoded by that version's schema (v2 keeps unknown
		// fields, a version the CRD lacks keeps none), then refused by validation; /status keeps
		// all but the status of the stored object.
		for _, apiVersion := range []string{"example.com/v2", "example.com/v9"} {
			resp := api.do("PATCH", widgets+"/w", `{"apiVersion":"`+apiVersion+`","spec":{"extra":1}}`, mergePatch)
			resp.expectStatus(t, metav1.Status{
				Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
				Message: `Widget.example.com "w" is invalid: apiVersion: Invalid value: "` + apiVersion + `": must be example.com/v1`,
				Details: &metav1.StatusDetails{Name: "w", Group: "example.com", Kind: "Widget", Causes: []metav1.StatusCause{{
					Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: "` + apiVersion + `": must be example.com/v1`, Field: "apiVersion"}}}})
			if warnings := resp.header.Values("Warning"); apiVersion == "example.com/v9" && !slices.Equal(warnings, []string{`299 - "unknown field \"spec\""`, `299 - "unknown field \"status\""`}) {
				t.Fatalf("warnings %q", warnings)
			}
		}
		before := api.do("GET", widgets+"/w", "").expect(t, http.StatusOK).object(t)
		got = api.do("PATCH", widgets+"/w/status", `{"apiVersion":"example.com/v2"}`, mergePatch).expect(t, http.StatusOK).object(t)
		if !reflect.DeepEqual(got, before) {
			t.Fatalf("/status patched to another apiVersion: %v, was %v", got, before)
		}

		api.do("PATCH", widgets+"/w", `{"spec":{"color":"red"}}`, strategicPatch).expectStatus(t, metav1.Status{
			Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
			Message: "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"})
	})
}

// The patch rules are the registry's, tested in server/registry; HTTP picks the patch type by
// Content-Type, reads fieldValidation and dryRun from the query, and sends warnings as headers.
func TestPatchHTTP(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", cmPath, `{"metadata":{"name":"p"},"data":{"a":"1"}}`).expect(t, http.StatusCreated)
	got := api.do("PATCH", cmPath+"/p", `{"data":{"a":null,"b":"2"}}`, mergePatch).expect(t, http.StatusOK).object(t)
	expectField(t, got, map[string]any{"b": "2"}, "data")
	got = api.do("PATCH", cmPath+"/p", `[{"op":"add","path":"/data/c","value":"3"}]`, jsonPatch).expect(t, http.StatusOK).object(t)
	expectField(t, got, map[string]any{"b": "2", "c": "3"}, "data")
	got = api.do("PATCH", cmPath+"/p", `{"data":{"d":"4"}}`, strategicPatch).expect(t, http.StatusOK).object(t)
	expectField(t, got, map[string]any{"b": "2", "c": "3", "d": "4"}, "data")
	got = api.do("PATCH", cmPath+"/p?fieldManager=m", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p\ndata:\n  e: \"5\"\n", applyPatch).expect(t, http.StatusOK).object(t)
	expectField(t, got, "5", "data", "e")

	resp := api.do("PATCH", cmPath+"/p", `{"foo":1}`, mergePatch).expect(t, http.StatusOK)
	if warnings := resp.header.Values("Warning"); !slices.Equal(warnings, []string{`299 - "unknown field \"foo\""`}) {
		t.Fatalf("warnings %q", warnings)
	}
	resp = api.do("PATCH", cmPath+"/p?fieldValidation=Ignore", `{"foo":1}`, mergePatch).expect(t, http.StatusOK)
	if warnings := resp.header.Values("Warning"); len(warnings) != 0 {
		t.Fatalf("warnings under Ignore: %q", warnings)
	}
	before := api.currentRevision(t)
	dry := api.do("PATCH", cmPath+"/p?dryRun=All", `{"data":{"g":"7"}}`, mergePatch).expect(t, http.StatusOK).object(t)
	if expectField(t, dry, "7", "data", "g"); api.currentRevision(t) != before {
		t.Fatal("a dry-run patch wrote")
	}
}
