package endpoints_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNamespaceAnswersAsKube: what kube-apiserver answers about a namespace's life, as its full
// comparison found it. The name label is kube's defaulting, so the creator owns it, and the
// empty spec a decoded namespace has is no one's; a delete with another uid is refused in its
// namespace storage's words; the namespace then being deleted has a deletionTimestamp and no
// grace period, and refuses new content with the NamespaceTerminating cause.
func TestNamespaceAnswersAsKube(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		const doomed = "/api/v1/namespaces/doomed"
		created := api.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"doomed","finalizers":["example.com/hold"]}}`).expect(t, http.StatusCreated).object(t)
		entries, _ := nested(created, "metadata", "managedFields").([]any)
		if len(entries) != 1 {
			t.Fatalf("managedFields %v, want the creator's entry", entries)
		}
		var want map[string]any
		_ = json.Unmarshal([]byte(`{"f:metadata":{"f:finalizers":{".":{},"v:\"example.com/hold\"":{}},"f:labels":{".":{},"f:kubernetes.io/metadata.name":{}}}}`), &want)
		if diff := cmp.Diff(want, nested(entries[0].(map[string]any), "fieldsV1")); diff != "" {
			t.Errorf("the creator's fields (-kube's +got):\n%s", diff)
		}

		api.do("DELETE", doomed, `{"preconditions":{"uid":"6b0e7c1e-0000-4000-8000-000000000000"}}`).expectStatus(t, metav1.Status{
			Code: http.StatusConflict, Reason: metav1.StatusReasonConflict,
			Message: `Operation cannot be fulfilled on namespaces "doomed": Precondition failed: UID in precondition: 6b0e7c1e-0000-4000-8000-000000000000, UID in object meta: ` + str(created, "metadata", "uid"),
			Details: &metav1.StatusDetails{Name: "doomed", Kind: "namespaces"},
		})

		deleting := api.do("DELETE", doomed, "").expect(t, http.StatusOK).object(t)
		if nested(deleting, "metadata", "deletionTimestamp") == nil || nested(deleting, "metadata", "deletionGracePeriodSeconds") != nil {
			t.Errorf("deleting namespace's metadata %v, want a deletionTimestamp and no grace period", deleting["metadata"])
		}

		api.do("POST", doomed+"/configmaps", `{"metadata":{"name":"late"}}`).expectStatus(t, metav1.Status{
			Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
			Message: `configmaps "late" is forbidden: unable to create new content in namespace doomed because it is being terminated`,
			Details: &metav1.StatusDetails{Name: "late", Kind: "configmaps", Causes: []metav1.StatusCause{
				{Type: "NamespaceTerminating", Message: "namespace doomed is being terminated", Field: "metadata.namespace"}}},
		})
	})
}
