package endpoints_test

import (
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sqlkube/sqlkube/server/controllers/controllertest"
)

// TestCRDThroughTheAPI drives a CRD's life through the server's own handlers: the type is
// served when the create returns, a bad CRD is refused with apiextensions' causes, and a
// deleted CRD takes its objects and paths with it.
func TestCRDThroughTheAPI(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
		yaml := "Content-Type: application/yaml"
		created := api.do(http.MethodPost, crds, crdYAML("widgets", "Widget", "v1"), yaml).expect(t, http.StatusCreated).object(t)
		if str(created, "status", "acceptedNames", "kind") != "Widget" || nested(created, "status", "storedVersions") == nil {
			t.Errorf("created CRD status: %v", created["status"])
		}
		api.do(http.MethodGet, "/apis/example.com/v1", "").expect(t, http.StatusOK)
		api.do(http.MethodPost, "/apis/example.com/v1/namespaces/default/widgets",
			`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`).expect(t, http.StatusCreated)

		bad := fromYAML(t, crdYAML("gadgets", "Gadget", "v1"))
		bad.SetName("gizmos.example.com")
		body, _ := bad.MarshalJSON()
		api.do(http.MethodPost, crds, string(body)).expectStatus(t, metav1.Status{
			Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
			Message: `CustomResourceDefinition.apiextensions.k8s.io "gizmos.example.com" is invalid: metadata.name: Invalid value: "gizmos.example.com": must be spec.names.plural+"."+spec.group`,
			Details: &metav1.StatusDetails{Name: "gizmos.example.com", Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition",
				Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "metadata.name",
					Message: `Invalid value: "gizmos.example.com": must be spec.names.plural+"."+spec.group`}}},
		})

		deleting := api.do(http.MethodDelete, crds+"/widgets.example.com", "").expect(t, http.StatusOK).object(t)
		if nested(deleting, "metadata", "deletionTimestamp") == nil {
			t.Errorf("the DELETE answered a CRD not marked deleted: %v", deleting["metadata"])
		}
		// Marking an object that tracks generation as deleting bumps it, as kube-apiserver does.
		if gen := nested(deleting, "metadata", "generation"); gen != float64(2) {
			t.Errorf("generation of the CRD marked deleted = %v, want 2", gen)
		}
		controllertest.Eventually(t, "the CRD is gone", func() bool {
			return api.do(http.MethodGet, crds+"/widgets.example.com", "").code == http.StatusNotFound
		})
		api.do(http.MethodGet, "/apis/example.com/v1/namespaces/default/widgets/w", "").expect(t, http.StatusNotFound)
		// The registry drops the type when its sync sees the deletion, a moment after the GET does.
		controllertest.Eventually(t, "the group version is no longer served", func() bool {
			return api.do(http.MethodGet, "/apis/example.com/v1", "").code == http.StatusNotFound
		})

		// Defined again, the type starts empty: its objects went with the CRD.
		api.do(http.MethodPost, crds, crdYAML("widgets", "Widget", "v1"), yaml).expect(t, http.StatusCreated)
		list := api.do(http.MethodGet, "/apis/example.com/v1/widgets", "").expect(t, http.StatusOK).object(t)
		if items, _ := list["items"].([]any); len(items) != 0 {
			t.Errorf("widgets after the CRD was deleted and created again: %v", items)
		}
	})
}
