package endpoints_test

import (
	"encoding/json"
	"net/http"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const sprocketCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"sprockets.example.com"},
"spec":{"group":"example.com","scope":"Namespaced",
 "names":{"plural":"sprockets","singular":"sprocket","kind":"Sprocket","listKind":"SprocketList"},
 "versions":[{"name":"v1","served":true,"storage":true,
   "subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas","labelSelectorPath":".status.selector"}},
   "schema":{"openAPIV3Schema":{"type":"object","properties":{
     "spec":{"type":"object","properties":{"replicas":{"type":"integer"}}},
     "status":{"type":"object","properties":{"replicas":{"type":"integer"},"selector":{"type":"string"}}}}}}}]}}`

const sprockets = "/apis/example.com/v1/namespaces/default/sprockets"

func decodeScaleResponse(t *testing.T, r response) autoscalingv1.Scale {
	t.Helper()
	var s autoscalingv1.Scale
	if err := json.Unmarshal(r.body, &s); err != nil {
		t.Fatalf("not a Scale: %v: %s", err, r.body)
	}
	return s
}

func TestScaleSubresource(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", sprocketCRD).expect(t, http.StatusCreated)
		api.do("POST", sprockets, `{"apiVersion":"example.com/v1","kind":"Sprocket","metadata":{"name":"s"},"spec":{"replicas":1}}`).expect(t, http.StatusCreated)
		created := api.do("PATCH", sprockets+"/s/status", `{"status":{"replicas":1,"selector":"app=s"}}`, "Content-Type: application/merge-patch+json").expect(t, http.StatusOK).object(t)
		rv := str(created, "metadata", "resourceVersion")

		got := decodeScaleResponse(t, api.do("GET", sprockets+"/s/scale", "").expect(t, http.StatusOK))
		want := autoscalingv1.Scale{
			TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
			ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default", UID: typesUID(str(created, "metadata", "uid")), ResourceVersion: rv, CreationTimestamp: got.CreationTimestamp},
			Spec:       autoscalingv1.ScaleSpec{Replicas: 1},
			Status:     autoscalingv1.ScaleStatus{Replicas: 1, Selector: "app=s"},
		}
		if got.CreationTimestamp.IsZero() || !equalJSON(got, want) {
			t.Fatalf("scale %+v, want %+v", got, want)
		}

		// A merge patch, as kubectl scale sends, writes spec.replicas and bumps the generation;
		// the manager owns spec.replicas through the scale subresource.
		patched := decodeScaleResponse(t, api.do("PATCH", sprockets+"/s/scale?fieldManager=scaler", `{"spec":{"replicas":3}}`, "Content-Type: application/merge-patch+json").expect(t, http.StatusOK))
		if patched.Spec.Replicas != 3 || patched.Status.Replicas != 1 || patched.ResourceVersion == rv {
			t.Fatalf("patched scale %+v", patched)
		}
		obj := api.do("GET", sprockets+"/s", "").expect(t, http.StatusOK).object(t)
		if nested(obj, "spec", "replicas") != float64(3) || nested(obj, "metadata", "generation") != float64(2) {
			t.Fatalf("scaled object %v", obj)
		}
		if entry := managedFieldsEntry(t, obj, "scaler"); entry["operation"] != "Update" || entry["subresource"] != "scale" ||
			!equalJSON(entry["fieldsV1"], map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{}}}) {
			t.Fatalf("managedFields entry of the scaler: %v", entry)
		}
		smp := decodeScaleResponse(t, api.do("PATCH", sprockets+"/s/scale", `{"spec":{"replicas":4}}`, "Content-Type: application/strategic-merge-patch+json").expect(t, http.StatusOK))
		patched = decodeScaleResponse(t, api.do("PATCH", sprockets+"/s/scale", `[{"op":"replace","path":"/spec/replicas","value":3}]`, "Content-Type: application/json-patch+json").expect(t, http.StatusOK))
		if smp.Spec.Replicas != 4 || patched.Spec.Replicas != 3 {
			t.Fatalf("strategic merge patch to %d, then JSON patch to %d", smp.Spec.Replicas, patched.Spec.Replicas)
		}

		// PUT with a stale resourceVersion conflicts; with the current one it applies.
		api.do("PUT", sprockets+"/s/scale", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"s","resourceVersion":"`+rv+`"},"spec":{"replicas":5}}`).expectStatus(t, metav1.Status{
			Code: 409, Reason: metav1.StatusReasonConflict,
			Message: `Operation cannot be fulfilled on sprockets.example.com "s": the object has been modified; please apply your changes to the latest version and try again`,
			Details: &metav1.StatusDetails{Name: "s", Group: "example.com", Kind: "sprockets"}})
		put := decodeScaleResponse(t, api.do("PUT", sprockets+"/s/scale", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"s","resourceVersion":"`+patched.ResourceVersion+`"},"spec":{"replicas":5}}`).expect(t, http.StatusOK))
		if put.Spec.Replicas != 5 {
			t.Fatalf("put scale %+v", put)
		}

		// Unknown fields of a Scale body: a warning by default, 400 under Strict.
		scaleBody := `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"s"},"spec":{"replicas":5,"extra":1}}`
		warned := api.do("PUT", sprockets+"/s/scale", scaleBody).expect(t, http.StatusOK)
		if got := warned.header.Values("Warning"); len(got) != 1 || got[0] != `299 - "unknown field \"spec.extra\""` {
			t.Fatalf("warnings %q", got)
		}
		api.do("PUT", sprockets+"/s/scale?fieldValidation=Strict", scaleBody).expectStatus(t, metav1.Status{
			Code: 400, Reason: metav1.StatusReasonBadRequest, Message: `no kind is registered for the type v1.Scale in scheme "pkg/runtime/scheme.go:111"`})
		// A Scale of another apiVersion, or whose replicas are not a number, gets the same answer
		// (kube-apiserver's custom resource scheme cannot name the Scale kind in its decoding error).
		for _, body := range []string{`{"apiVersion":"apps/v1","kind":"Scale","metadata":{"name":"s"},"spec":{"replicas":5}}`,
			`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"s"},"spec":{"replicas":"x"}}`} {
			api.do("PUT", sprockets+"/s/scale", body).expectStatus(t, metav1.Status{
				Code: 400, Reason: metav1.StatusReasonBadRequest, Message: `no kind is registered for the type v1.Scale in scheme "pkg/runtime/scheme.go:111"`})
		}

		api.do("PATCH", sprockets+"/s/scale", `{"spec":{"replicas":-1}}`, "Content-Type: application/merge-patch+json").expectStatus(t, metav1.Status{
			Code: 422, Reason: metav1.StatusReasonInvalid, Message: `Sprocket.example.com "s" is invalid: .spec.replicas: Invalid value: -1: should be a non-negative integer`,
			Details: &metav1.StatusDetails{Name: "s", Group: "example.com", Kind: "Sprocket", Causes: []metav1.StatusCause{{
				Type: metav1.CauseTypeFieldValueInvalid, Message: "Invalid value: -1: should be a non-negative integer", Field: ".spec.replicas"}}}})

		// Without spec replicas, GET is an internal error and a patch must set them.
		api.do("POST", sprockets, `{"apiVersion":"example.com/v1","kind":"Sprocket","metadata":{"name":"empty"},"spec":{}}`).expect(t, http.StatusCreated)
		api.do("GET", sprockets+"/empty/scale", "").expectStatus(t, metav1.Status{
			Code: 500, Reason: metav1.StatusReasonInternalError,
			Message: `Internal error occurred: the spec replicas field ".spec.replicas" does not exist`,
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Message: `the spec replicas field ".spec.replicas" does not exist`}}}})
		api.do("PATCH", sprockets+"/empty/scale", `{"status":{"replicas":2}}`, "Content-Type: application/merge-patch+json").expectStatus(t, metav1.Status{
			Code: 400, Reason: metav1.StatusReasonBadRequest, Message: `the spec replicas field ".spec.replicas" cannot be empty`})

		api.do("GET", sprockets+"/missing/scale", "").expectStatus(t, metav1.Status{
			Code: 404, Reason: metav1.StatusReasonNotFound, Message: `sprockets.example.com "missing" not found`,
			Details: &metav1.StatusDetails{Name: "missing", Group: "example.com", Kind: "sprockets"}})
		api.do("GET", "/api/v1/namespaces/default/configmaps/x/scale", "").expect(t, http.StatusNotFound)
	})
}

// TestScaleManagedFields: the scale handler moves the ownership of the spec replicas to an entry
// of the Scale's writer, even when the write changes nothing, so that it writes the object.
func TestScaleManagedFields(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", sprocketCRD).expect(t, http.StatusCreated)
	created := api.do("POST", sprockets+"?fieldManager=maker", `{"apiVersion":"example.com/v1","kind":"Sprocket","metadata":{"name":"s"},"spec":{"replicas":1}}`).expect(t, http.StatusCreated).object(t)
	scale := decodeScaleResponse(t, api.do("PATCH", sprockets+"/s/scale?fieldManager=maker", `{}`, mergePatch).expect(t, http.StatusOK))
	if scale.ResourceVersion == str(created, "metadata", "resourceVersion") {
		t.Fatalf("a patch of /scale changing nothing wrote nothing")
	}
	got := nested(api.do("GET", sprockets+"/s", "").expect(t, http.StatusOK).object(t), "metadata", "managedFields").([]any)
	if len(got) != 2 {
		t.Fatalf("managedFields %v", got)
	}
	replicas, spec := got[0].(map[string]any), got[1].(map[string]any) // untimed first, as kube encodes them
	if spec["time"] == nil || replicas["time"] != nil || spec["manager"] != "maker" || replicas["manager"] != "maker" ||
		!equalJSON(spec["fieldsV1"], map[string]any{"f:spec": map[string]any{}}) ||
		!equalJSON(replicas["fieldsV1"], map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{}}}) {
		t.Fatalf("managedFields %v", got)
	}
}

// TestScaleApply applies Scales: the replicas' owner conflicts, and, as in kube-apiserver, an
// apply that would change the Scale fails (its custom resource converter cannot convert the
// result); one that leaves it as it is shares the ownership of the replicas.
func TestScaleApply(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", sprocketCRD).expect(t, http.StatusCreated)
		api.do("PATCH", sprockets+"/s?fieldManager=m", `{"apiVersion":"example.com/v1","kind":"Sprocket","metadata":{"name":"s"},"spec":{"replicas":1}}`, applyPatch).expect(t, http.StatusCreated)
		scale := func(replicas string) string {
			return `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"s"},"spec":{"replicas":` + replicas + `}}`
		}
		api.do("PATCH", sprockets+"/s/scale?fieldManager=hpa", scale("3"), applyPatch).expectStatus(t, metav1.Status{
			Code: http.StatusConflict, Reason: metav1.StatusReasonConflict, Message: `Apply failed with 1 conflict: conflict with "m": .spec.replicas`,
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "m"`, Field: ".spec.replicas"}}}})
		api.do("PATCH", sprockets+"/s/scale?fieldManager=hpa&force=true", scale("3"), applyPatch).expectStatus(t, metav1.Status{
			Code:    http.StatusInternalServerError,
			Message: "failed to convert new object (/s; autoscaling/v1, Kind=Scale) to proper version: request to convert CR to an invalid group/version: autoscaling/v1"})
		api.do("PATCH", sprockets+"/s/scale?fieldManager=hpa", `{"apiVersion":"apps/v1","kind":"Scale","metadata":{"name":"s"}}`, applyPatch).expectStatus(t, metav1.Status{
			Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest, Message: "invalid object type: apps/v1, Kind=Scale"})

		applied := decodeScaleResponse(t, api.do("PATCH", sprockets+"/s/scale?fieldManager=hpa", scale("1"), applyPatch).expect(t, http.StatusOK))
		obj := api.do("GET", sprockets+"/s", "").expect(t, http.StatusOK).object(t)
		if entry := managedFieldsEntry(t, obj, "hpa"); applied.Spec.Replicas != 1 || entry["operation"] != "Apply" || entry["subresource"] != "scale" || entry["time"] != nil ||
			!equalJSON(entry["fieldsV1"], map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{}}}) {
			t.Fatalf("managedFields entry of the applier: %v", entry)
		}
	})
}

// managedFieldsEntry is obj's managedFields entry of manager.
func managedFieldsEntry(t *testing.T, obj map[string]any, manager string) map[string]any {
	t.Helper()
	entries, _ := nested(obj, "metadata", "managedFields").([]any)
	for _, e := range entries {
		if entry, ok := e.(map[string]any); ok && entry["manager"] == manager {
			return entry
		}
	}
	t.Fatalf("no managedFields entry of %s: %v", manager, entries)
	return nil
}

func equalJSON(a, b any) bool {
	aj, _ := json.Marshal(a)
	bj, _ := json.Marshal(b)
	return string(aj) == string(bj)
}
