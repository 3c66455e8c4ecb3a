// Package admissiontest holds the admission configuration and the webhook that both the
// admission chain's tests (server/admission) and the HTTP layer's tests and benchmarks (server)
// write. Only tests import it.
package admissiontest

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"

	admissionv1 "k8s.io/api/admission/v1"
)

// DenyingPolicy is the ValidatingAdmissionPolicy no-forbidden: it refuses ConfigMaps with
// data.forbidden, with a message built by CEL.
const DenyingPolicy = `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy",
	"metadata":{"name":"no-forbidden"},
	"spec":{"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["configmaps"]}]},
	"validations":[{"expression":"!has(object.data) || !('forbidden' in object.data)","messageExpression":"'key forbidden in ' + object.metadata.name"}]}}`

// Binding is the ValidatingAdmissionPolicyBinding name of policy, with actions (a JSON array)
// as its validationActions.
func Binding(name, policy, actions string) string {
	return `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"` + name +
		`"},"spec":{"policyName":"` + policy + `","validationActions":` + actions + `}}`
}

// DenyForbiddenKey is a validating webhook refusing ConfigMaps with data.forbidden.
func DenyForbiddenKey(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	var cm struct{ Data map[string]string }
	_ = json.Unmarshal(review.Request.Object.Raw, &cm)
	_, forbidden := cm.Data["forbidden"]
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: !forbidden}
	review.Request = nil
	_ = json.NewEncoder(w).Encode(&review)
}

// CABundle is the JSON of the PEM bundle that verifies hook's certificate.
func CABundle(hook *httptest.Server) string {
	bundle, _ := json.Marshal(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}))
	return string(bundle)
}
