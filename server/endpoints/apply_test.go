package endpoints_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// managedFieldsOf are an object's managedFields without their times, which it checks are set.
func managedFieldsOf(t *testing.T, obj map[string]any) []any {
	t.Helper()
	entries, _ := nested(obj, "metadata", "managedFields").([]any)
	for _, e := range entries {
		entry := e.(map[string]any)
		if entry["time"] == nil {
			t.Fatalf("managedFields entry without a time: %v", entry)
		}
		delete(entry, "time")
	}
	return entries
}

// expectManagedFields fails unless obj's managedFields, without their times, are want.
func expectManagedFields(t *testing.T, obj map[string]any, want []any) {
	t.Helper()
	got := managedFieldsOf(t, obj)
	if !reflect.DeepEqual(got, want) {
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(want)
		t.Fatalf("managedFields\n got %s\nwant %s", gotJSON, wantJSON)
	}
}

func managedEntry(manager, operation, apiVersion, subresource string, fields map[string]any) map[string]any {
	e := map[string]any{"manager": manager, "operation": operation, "apiVersion": apiVersion, "fieldsType": "FieldsV1", "fieldsV1": fields}
	if subresource != "" {
		e["subresource"] = subresource
	}
	return e
}

func applyConfigMap(data string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n" + data
}

// The apply rules are the registry's, tested in server/registry; HTTP answers 201 to an apply
// that creates, reads fieldManager and force from the query, and names a manager by User-Agent.
func TestApplyHTTP(t *testing.T) {
	api := sqliteAPI(t)
	got := api.do("PATCH", cmPath+"/a?fieldManager=alice", applyConfigMap("  one: \"1\"\n"), applyPatch).expect(t, http.StatusCreated).object(t)
	expectManagedFields(t, got, []any{managedEntry("alice", "Apply", "v1", "", map[string]any{"f:data": map[string]any{"f:one": map[string]any{}}})})
	api.do("PATCH", cmPath+"/a?fieldManager=bob", applyConfigMap("  one: \"2\"\n"), applyPatch).expect(t, http.StatusConflict)
	got = api.do("PATCH", cmPath+"/a?fieldManager=bob&force=true", applyConfigMap("  one: \"2\"\n"), applyPatch).expect(t, http.StatusOK).object(t)
	expectField(t, got, "2", "data", "one")
	got = api.do("PATCH", cmPath+"/a", `{"data":{"three":"4"}}`, mergePatch, "User-Agent: kubectl/v1.32.0 (linux/amd64) kubernetes/abc").expect(t, http.StatusOK).object(t)
	expectManagedFields(t, got, []any{
		managedEntry("bob", "Apply", "v1", "", map[string]any{"f:data": map[string]any{"f:one": map[string]any{}}}),
		managedEntry("kubectl", "Update", "v1", "", map[string]any{"f:data": map[string]any{"f:three": map[string]any{}}}),
	})
}

// An applied Secret is decoded as a body of its type, as kube converts it: its write-only
// stringData is folded into data before validation (controller-runtime's "should propagate a
// typed error" applies a dockercfg Secret by stringData), and changing its type is refused.
func TestApplySecretStringData(t *testing.T) {
	api := sqliteAPI(t)
	const secrets = "/api/v1/namespaces/default/secrets"
	got := api.do("PATCH", secrets+"/typed?fieldManager=test", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: typed\n"+
		"type: kubernetes.io/dockercfg\nstringData:\n  .dockercfg: \"{}\"\n", applyPatch).expect(t, http.StatusCreated).object(t)
	expectField(t, got, "e30=", "data", ".dockercfg")
	if nested(got, "stringData") != nil {
		t.Errorf("stringData stored: %v", got)
	}
	api.do("PATCH", secrets+"/typed?fieldManager=test", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: typed\ntype: Opaque\n", applyPatch).
		expect(t, http.StatusUnprocessableEntity)
}

// What a write records in managedFields is the registry's rule, tested in server/registry; HTTP
// names the manager by the fieldManager parameter, else by User-Agent.
func TestManagedFieldsOfWrites(t *testing.T) {
	api := sqliteAPI(t)
	got := api.do("POST", cmPath+"?fieldManager=creator", `{"metadata":{"name":"m","labels":{"l":"1"}},"data":{"a":"1"}}`).expect(t, http.StatusCreated).object(t)
	expectManagedFields(t, got, []any{managedEntry("creator", "Update", "v1", "", map[string]any{
		"f:data":     map[string]any{".": map[string]any{}, "f:a": map[string]any{}},
		"f:metadata": map[string]any{"f:labels": map[string]any{".": map[string]any{}, "f:l": map[string]any{}}},
	})})
	got = api.do("PUT", cmPath+"/m", `{"metadata":{"name":"m","labels":{"l":"1"}},"data":{"a":"1","b":"2"}}`, "User-Agent: updater/1.0").expect(t, http.StatusOK).object(t)
	expectManagedFields(t, got, []any{
		managedEntry("creator", "Update", "v1", "", map[string]any{
			"f:data":     map[string]any{".": map[string]any{}, "f:a": map[string]any{}},
			"f:metadata": map[string]any{"f:labels": map[string]any{".": map[string]any{}, "f:l": map[string]any{}}},
		}),
		managedEntry("updater", "Update", "v1", "", map[string]any{"f:data": map[string]any{"f:b": map[string]any{}}}),
	})

	// Writes through /status are recorded as such.
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgetCRD).expect(t, http.StatusCreated)
	api.do("POST", widgets+"?fieldManager=maker", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"red"}}`).expect(t, http.StatusCreated)
	got = api.do("PATCH", widgets+"/w/status?fieldManager=reporter", `{"status":{"ready":true}}`, mergePatch).expect(t, http.StatusOK).object(t)
	expectManagedFields(t, got, []any{
		managedEntry("maker", "Update", "example.com/v1", "", map[string]any{"f:spec": map[string]any{".": map[string]any{}, "f:color": map[string]any{}, "f:size": map[string]any{}}}),
		managedEntry("reporter", "Update", "example.com/v1", "status", map[string]any{"f:status": map[string]any{".": map[string]any{}, "f:ready": map[string]any{}}}),
	})
}

// TestApplyStatus applies to /status: the manager owns the status, as a status writer.
func TestApplyStatus(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"n1"}}`).expect(t, http.StatusCreated)
	got := api.do("PATCH", "/api/v1/namespaces/n1/status?fieldManager=st", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n1\nstatus:\n  conditions:\n  - type: X\n    status: \"True\"\n", applyPatch).expect(t, http.StatusOK).object(t)
	// kube's NamespaceCondition encodes its unset lastTransitionTime as null, as kube-apiserver answers.
	expectField(t, got, []any{map[string]any{"type": "X", "status": "True", "lastTransitionTime": nil}}, "status", "conditions")
	want := managedEntry("st", "Apply", "v1", "status", map[string]any{"f:status": map[string]any{"f:conditions": map[string]any{
		`k:{"type":"X"}`: map[string]any{".": map[string]any{}, "f:status": map[string]any{}, "f:type": map[string]any{}}}}})
	if entries := managedFieldsOf(t, got); !slices.ContainsFunc(entries, func(e any) bool { return reflect.DeepEqual(e, want) }) {
		t.Fatalf("managedFields without the status applier's: %v", entries)
	}

	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgetCRD).expect(t, http.StatusCreated)
	widget := "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  color: red\nstatus:\n  ready: true\n"
	got = api.do("PATCH", widgets+"/w?fieldManager=a", widget, applyPatch).expect(t, http.StatusCreated).object(t)
	expectField(t, got, nil, "status")
	got = api.do("PATCH", widgets+"/w/status?fieldManager=b", widget, applyPatch).expect(t, http.StatusOK).object(t)
	expectField(t, got, true, "status", "ready")
	expectManagedFields(t, got, []any{
		managedEntry("a", "Apply", "example.com/v1", "", map[string]any{"f:spec": map[string]any{"f:color": map[string]any{}}}),
		managedEntry("b", "Apply", "example.com/v1", "status", map[string]any{"f:status": map[string]any{"f:ready": map[string]any{}}}),
	})

}

// TestApplyWithoutSchema applies to custom resources whose schema keeps unknown fields: their
// fields are deduced from the objects, maps merged key by key.
func TestApplyWithoutSchema(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", `{"metadata":{"name":"gadgets.example.com"},
"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"gadgets","singular":"gadget","kind":"Gadget","listKind":"GadgetList"},
 "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`).expect(t, http.StatusCreated)
	const gadgets = "/apis/example.com/v1/namespaces/default/gadgets"
	gadget := func(spec string) string {
		return "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\nspec:\n" + spec
	}
	api.do("PATCH", gadgets+"/g?fieldManager=a", gadget("  x:\n    p: 1\n"), applyPatch).expect(t, http.StatusCreated)
	got := api.do("PATCH", gadgets+"/g?fieldManager=b", gadget("  x:\n    z: 2\n"), applyPatch).expect(t, http.StatusOK).object(t)
	expectField(t, got, map[string]any{"p": float64(1), "z": float64(2)}, "spec", "x")
	api.do("PATCH", gadgets+"/g?fieldManager=b", gadget("  x:\n    p: 3\n"), applyPatch).expectStatus(t, metav1.Status{
		Code: http.StatusConflict, Reason: metav1.StatusReasonConflict,
		Message: `Apply failed with 1 conflict: conflict with "a": .spec.x.p`,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "a"`, Field: ".spec.x.p"}}}})
}

func TestApplyStrictness(t *testing.T) {
	api := sqliteAPI(t)
	config := applyConfigMap("  one: \"1\"\n  one: \"2\"\n")
	api.do("PATCH", cmPath+"/a?fieldManager=m&fieldValidation=Strict", config, applyPatch).expectStatus(t, metav1.Status{
		Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
		Message: `error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:` + "\n" + `  line 7: key "one" already set in map`})
	resp := api.do("PATCH", cmPath+"/a?fieldManager=m", config, applyPatch).expect(t, http.StatusCreated)
	if warnings := resp.header.Values("Warning"); len(warnings) != 1 || !strings.Contains(warnings[0], `key \"one\" already set in map`) {
		t.Fatalf("warnings %q", warnings)
	}
}

// TestApplyCreateWhileCRDTerminating: an apply cannot create objects of a CRD being deleted.
func TestApplyCreateWhileCRDTerminating(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgetCRD).expect(t, http.StatusCreated)
	api.do("POST", widgets, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"kept","finalizers":["example.com/keep"]}}`).expect(t, http.StatusCreated)
	api.do("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com", "").expect(t, http.StatusOK)
	api.do("PATCH", widgets+"/new?fieldManager=a", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: new\n", applyPatch).expectStatus(t, metav1.Status{
		Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
		Message: `widgets.example.com "new" is forbidden: create not allowed while custom resource definition is terminating`,
		Details: &metav1.StatusDetails{Name: "new", Group: "example.com", Kind: "widgets"}})
}
