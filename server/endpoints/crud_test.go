package endpoints_test

import (
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const cmPath = "/api/v1/namespaces/default/configmaps"

func TestCRUD(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		// kube-apiserver's storage refuses a create carrying a resourceVersion, as a 500 without a
		// reason; a dry run does not reach storage.
		api.do("POST", cmPath, `{"metadata":{"name":"x","resourceVersion":"77"}}`).expectStatus(t, metav1.Status{
			Code: http.StatusInternalServerError, Message: "resourceVersion should not be set on objects to be created"})
		api.do("POST", cmPath+"?dryRun=All", `{"metadata":{"name":"x","resourceVersion":"77"}}`).expect(t, http.StatusCreated)
		created := api.do("POST", cmPath, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","uid":"client-uid"},"data":{"a":"1"}}`).expect(t, http.StatusCreated).object(t)
		uid := str(created, "metadata", "uid")
		rv := str(created, "metadata", "resourceVersion")
		if uid == "" || uid == "client-uid" || rv == "" {
			t.Fatalf("server-set metadata missing: %v", created["metadata"])
		}
		ts, err := time.Parse(time.RFC3339, str(created, "metadata", "creationTimestamp"))
		if err != nil || time.Since(ts) > time.Minute {
			t.Fatalf("creationTimestamp %q: %v", str(created, "metadata", "creationTimestamp"), err)
		}
		if nested(created, "metadata", "generation") != nil {
			t.Fatalf("configmaps have no generation in kube-apiserver, got %v", nested(created, "metadata", "generation"))
		}

		got := api.do("GET", cmPath+"/x", "").expect(t, http.StatusOK).object(t)
		if str(got, "metadata", "resourceVersion") != rv || str(got, "data", "a") != "1" {
			t.Fatalf("get returned %v", got)
		}

		updated := api.do("PUT", cmPath+"/x", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","resourceVersion":"`+rv+`"},"data":{"a":"2"}}`).expect(t, http.StatusOK).object(t)
		rv2 := str(updated, "metadata", "resourceVersion")
		if rv2 == rv || str(updated, "metadata", "uid") != uid || str(updated, "metadata", "creationTimestamp") != str(created, "metadata", "creationTimestamp") {
			t.Fatalf("update: %v", updated["metadata"])
		}

		// Nothing changes: no new revision.
		same := api.do("PUT", cmPath+"/x", `{"metadata":{"name":"x"},"data":{"a":"2"}}`).expect(t, http.StatusOK).object(t)
		if str(same, "metadata", "resourceVersion") != rv2 {
			t.Fatalf("no-op update wrote revision %s (was %s)", str(same, "metadata", "resourceVersion"), rv2)
		}

		api.do("PUT", cmPath+"/x", `{"metadata":{"name":"x","resourceVersion":"`+rv+`"},"data":{"a":"3"}}`).expectStatus(t, metav1.Status{
			Code: 409, Reason: metav1.StatusReasonConflict,
			Message: `Operation cannot be fulfilled on configmaps "x": the object has been modified; please apply your changes to the latest version and try again`,
			Details: &metav1.StatusDetails{Name: "x", Kind: "configmaps"},
		})

		api.do("DELETE", cmPath+"/x", "").expectStatus(t, metav1.Status{
			Status: metav1.StatusSuccess, Code: 0,
			Details: &metav1.StatusDetails{Name: "x", Kind: "configmaps", UID: typesUID(uid)},
		})
		api.do("GET", cmPath+"/x", "").expectStatus(t, metav1.Status{
			Code: 404, Reason: metav1.StatusReasonNotFound, Message: `configmaps "x" not found`,
			Details: &metav1.StatusDetails{Name: "x", Kind: "configmaps"},
		})
	})
}
