package endpoints_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/sqlkube/sqlkube/server/endpoints"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestReviewRoutes: the review endpoints answer a POST with 201 and the answered review, refuse
// other methods (405) and bodies that do not decode (400), and pass a
// LocalSubjectAccessReview the namespace of its path.
func TestReviewRoutes(t *testing.T) {
	api := sqliteAPI(t)
	const ssar = `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}`
	resp := api.do("POST", endpoints.AuthorizationPrefix+"selfsubjectaccessreviews", ssar).expect(t, http.StatusCreated)
	var review authorizationv1.SelfSubjectAccessReview
	if err := json.Unmarshal(resp.body, &review); err != nil || !review.Status.Allowed || review.Kind != "SelfSubjectAccessReview" {
		t.Errorf("answer %s (%v), want an allowed SelfSubjectAccessReview", resp.body, err)
	}
	// As kube's create handler, the answer records the client's Update of what it posted.
	fields := review.ManagedFields
	wantFields := `{"f:spec":{"f:resourceAttributes":{".":{},"f:resource":{},"f:verb":{}}}}`
	if len(fields) != 1 || fields[0].Operation != metav1.ManagedFieldsOperationUpdate || fields[0].APIVersion != "authorization.k8s.io/v1" ||
		fields[0].Subresource != "" || fields[0].FieldsV1 == nil || string(fields[0].FieldsV1.Raw) != wantFields {
		t.Errorf("answer's managedFields %+v, want one Update of %s", fields, wantFields)
	}
	api.do("GET", endpoints.AuthorizationPrefix+"selfsubjectaccessreviews", "").expect(t, http.StatusMethodNotAllowed)
	api.do("POST", endpoints.AuthenticationPrefix+"tokenreviews", `{"spec":`).expect(t, http.StatusBadRequest)
	const lsar = `{"spec":{"user":"bob","resourceAttributes":{"namespace":"a","verb":"get","resource":"pods"}}}`
	api.do("POST", endpoints.AuthorizationPrefix+"namespaces/a/localsubjectaccessreviews", lsar).expect(t, http.StatusCreated)
	api.do("POST", endpoints.AuthorizationPrefix+"namespaces/b/localsubjectaccessreviews", lsar).expect(t, http.StatusBadRequest)
	api.do("POST", endpoints.AuthenticationPrefix+"selfsubjectreviews", `{}`).expect(t, http.StatusCreated)
	api.do("POST", endpoints.AuthorizationPrefix+"selfsubjectrulesreviews", `{"spec":{"namespace":"a"}}`).expect(t, http.StatusCreated)
}
