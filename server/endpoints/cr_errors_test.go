package endpoints_test

import (
	"net/http"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCustomResourceRequestErrors: the answers apiextensions-apiserver gives, and kube-apiserver's
// built-ins do not, for requests its custom resource handler refuses.
func TestCustomResourceRequestErrors(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgetCRD).expect(t, http.StatusCreated)
	const widgets = "/apis/example.com/v1/namespaces/default/widgets"
	api.do("POST", widgets, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`).expect(t, http.StatusCreated)
	for _, tt := range []struct {
		name, method, path, body string
		want                     metav1.Status
	}{
		{"create without a kind", "POST", widgets, `{}`, metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest,
			Message: `the object provided is unrecognized (must be of type Widget): Object 'Kind' is missing in '{}' ({})`}},
		{"create of another kind", "POST", widgets, `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g"}}`, metav1.Status{
			Code: 422, Reason: metav1.StatusReasonInvalid, Message: `Gadget.example.com "g" is invalid: kind: Invalid value: "Gadget": must be Widget`,
			Details: &metav1.StatusDetails{Name: "g", Group: "example.com", Kind: "Gadget", Causes: []metav1.StatusCause{{
				Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: "Gadget": must be Widget`, Field: "kind"}}}}},
		{"unknown subresource", "GET", widgets + "/w/nope", "", metav1.Status{Code: 404, Reason: metav1.StatusReasonNotFound,
			Message: `widgets.example.com "w" not found`, Details: &metav1.StatusDetails{Name: "w", Group: "example.com", Kind: "widgets"}}},
		{"delete on status", "DELETE", widgets + "/w/status", "", metav1.Status{Code: 405, Reason: metav1.StatusReasonMethodNotAllowed,
			Message: `delete is not supported on resources of kind "widgets.example.com"`, Details: &metav1.StatusDetails{Group: "example.com", Kind: "widgets"}}},
		{"post on an object is a create", "POST", widgets + "/other", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`, metav1.Status{
			Code: 409, Reason: metav1.StatusReasonAlreadyExists, Message: `widgets.example.com "w" already exists`,
			Details: &metav1.StatusDetails{Name: "w", Group: "example.com", Kind: "widgets"}}},
		{"a path deeper than a subresource", "GET", widgets + "/missing/status/more", "", metav1.Status{Code: 404, Reason: metav1.StatusReasonNotFound,
			Message: `widgets.example.com "missing" not found`, Details: &metav1.StatusDetails{Name: "missing", Group: "example.com", Kind: "widgets"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api.do(tt.method, tt.path, tt.body).expectStatus(t, tt.want)
		})
	}
	// apiextensions-apiserver hands these to the end of kube-apiserver's handler chain.
	api.do("DELETE", "/apis/example.com/v1/widgets?labelSelector=a%3Db", "").expectPathNotFound(t)
	api.do("POST", "/apis/example.com/v1/widgets", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x"}}`).expectPathNotFound(t)
}

// TestCustomResourceAnswersFoundByConformance: answers the differential conformance harness
// (e2e/kuberef) found sqlkube gave differently from kube-apiserver, as kube gives them.
func TestCustomResourceAnswersFoundByConformance(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgetCRD).expect(t, http.StatusCreated)
	const widgets = "/apis/example.com/v1/namespaces/default/widgets"
	api.do("POST", widgets, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`).expect(t, http.StatusCreated)
	api.do("POST", widgets, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"held","finalizers":["example.com/x"]}}`).expect(t, http.StatusCreated)
	api.do("DELETE", widgets+"/held", "").expect(t, http.StatusOK)
	bad := func(message string) metav1.Status {
		return metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest, Message: message}
	}
	for _, tt := range []struct {
		name, method, path, body string
		headers                  []string
		want                     metav1.Status
	}{
		{"create without apiVersion", "POST", widgets, `{"kind":"Widget","metadata":{"name":"x"}}`, nil,
			bad("the API version in the data () does not match the expected API version (example.com/v1)")},
		{"null body", "POST", widgets, `null`, nil,
			bad(`the object provided is unrecognized (must be of type Widget): Object 'Kind' is missing in 'null' (6e756c6c)`)},
		{"array body", "POST", widgets, `[]`, nil,
			bad(`the object provided is unrecognized (must be of type Widget): couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" } (5b5d)`)},
		{"labels of the wrong type", "POST", widgets, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x","labels":{"a":1}}}`, nil,
			bad(`Widget in version "v1" cannot be handled as a Widget: json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string`)},
		{"update in another namespace", "PUT", widgets + "/w", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"other","namespace":"other"}}`, nil,
			bad("the namespace of the provided object does not match the namespace sent on the request")},
		{"update without a name", "PUT", widgets + "/w", `{"apiVersion":"example.com/v1","kind":"Widget"}`, nil,
			bad("the name of the object (w based on URL) was undeterminable: name must be provided")},
		{"update of the collection", "PUT", widgets, `{}`, nil, bad("name must be provided")},
		{"delete options of another kind", "DELETE", widgets + "/w", `{"kind":"Pod"}`, nil,
			bad(`no kind "Pod" is registered for version "meta.k8s.io/v1" in scheme "pkg/runtime/scheme.go:111"`)},
		{"delete options not JSON", "DELETE", widgets + "/w", `{"kind":`, nil,
			bad("couldn't get version/kind; json parse error: unexpected end of JSON input")},
		{"create of an object being deleted", "POST", widgets, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"held"}}`, nil,
			metav1.Status{Code: 409, Reason: metav1.StatusReasonAlreadyExists, Message: `object is being deleted: widgets.example.com "held" already exists`,
				Details: &metav1.StatusDetails{Name: "held", Group: "example.com", Kind: "widgets"}}},
		{"apply of an unknown field", "PATCH", widgets + "/ap?fieldManager=m", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"ap"},"spec":{"extra":1}}`,
			[]string{"Content-Type: application/apply-patch+yaml"},
			metav1.Status{Code: 500, Message: "failed to create typed patch object (/ap; example.com/v1, Kind=Widget): .spec.extra: field not declared in schema"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api.do(tt.method, tt.path, tt.body, tt.headers...).expectStatus(t, tt.want)
		})
	}
}

// TestCustomResourceWritesFoundByConformance: more answers the conformance harness found.
func TestCustomResourceWritesFoundByConformance(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgetCRD).expect(t, http.StatusCreated)
	const widgets = "/apis/example.com/v1/namespaces/default/widgets"
	created := api.do("POST", widgets, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","finalizers":["hold","a.b"]}}`).expect(t, http.StatusCreated)
	want := []string{
		`299 - "metadata.finalizers: \"a.b\": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"`,
		`299 - "metadata.finalizers: \"hold\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"`,
	}
	if got := created.header.Values("Warning"); !slices.Equal(got, want) {
		t.Errorf("warnings %q, want %q", got, want)
	}
	// A delete that asks for cascading and has to wait for finalizers is accepted, not done.
	api.do("DELETE", widgets+"/w", `{"orphanDependents":false}`).expect(t, http.StatusAccepted)
	// A list whose field selector names one object is not paged.
	api.do("POST", widgets, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x"}}`).expect(t, http.StatusCreated)
	list := api.do("GET", widgets+"?fieldSelector=metadata.name%3Dx&limit=1", "").expect(t, http.StatusOK).object(t)
	if meta := list["metadata"].(map[string]any); meta["continue"] != "" {
		t.Errorf("list of one name has continue %q", meta["continue"])
	}
}

// TestCustomResourceWatchesFoundByConformance: watch answers the conformance harness found.
func TestCustomResourceWatchesFoundByConformance(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgetCRD).expect(t, http.StatusCreated)
	const widgets = "/apis/example.com/v1/namespaces/default/widgets"
	api.do("POST", widgets, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`).expect(t, http.StatusCreated)
	// A legacy /watch/ path from resourceVersion 0 starts with the current objects.
	legacy := api.watch("/apis/example.com/v1/watch/namespaces/default/widgets?resourceVersion=0")
	if ev := legacy.next(); ev.Type != "ADDED" || ev.object(t)["metadata"].(map[string]any)["name"] != "w" {
		t.Errorf("first event %s %s, want w ADDED", ev.Type, ev.Object)
	}
	// The bookmark that ends the initial events is a bare object: no generation.
	list := api.watch(widgets + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
	list.next()
	bookmark := list.next()
	meta := bookmark.object(t)["metadata"].(map[string]any)
	if _, ok := meta["generation"]; bookmark.Type != "BOOKMARK" || ok {
		t.Errorf("event %s %s, want a BOOKMARK without generation", bookmark.Type, bookmark.Object)
	}
}
