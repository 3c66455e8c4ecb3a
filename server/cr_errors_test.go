package server

import (
	"net/http"
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
