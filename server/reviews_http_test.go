package server

import (
	"encoding/json"
	"net/http"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
)

// TestReviewRoutes: the review endpoints answer a POST with 201 and the answered review, refuse
// other methods (405) and bodies that do not decode (400), and pass a
// LocalSubjectAccessReview the namespace of its path.
func TestReviewRoutes(t *testing.T) {
	api := sqliteAPI(t)
	const ssar = `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}`
	resp := api.do("POST", authorizationPrefix+"selfsubjectaccessreviews", ssar).expect(t, http.StatusCreated)
	var review authorizationv1.SelfSubjectAccessReview
	if err := json.Unmarshal(resp.body, &review); err != nil || !review.Status.Allowed || review.Kind != "SelfSubjectAccessReview" {
		t.Errorf("answer %s (%v), want an allowed SelfSubjectAccessReview", resp.body, err)
	}
	api.do("GET", authorizationPrefix+"selfsubjectaccessreviews", "").expect(t, http.StatusMethodNotAllowed)
	api.do("POST", authenticationPrefix+"tokenreviews", `{"spec":`).expect(t, http.StatusBadRequest)
	const lsar = `{"spec":{"user":"bob","resourceAttributes":{"namespace":"a","verb":"get","resource":"pods"}}}`
	api.do("POST", authorizationPrefix+"namespaces/a/localsubjectaccessreviews", lsar).expect(t, http.StatusCreated)
	api.do("POST", authorizationPrefix+"namespaces/b/localsubjectaccessreviews", lsar).expect(t, http.StatusBadRequest)
	api.do("POST", authenticationPrefix+"selfsubjectreviews", `{}`).expect(t, http.StatusCreated)
	api.do("POST", authorizationPrefix+"selfsubjectrulesreviews", `{"spec":{"namespace":"a"}}`).expect(t, http.StatusCreated)
}
