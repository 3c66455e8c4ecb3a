package endpoints_test

import (
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sqlkube/sqlkube/server/admission/admissiontest"
	"github.com/sqlkube/sqlkube/server/controllers/controllertest"
)

const (
	policiesPath = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
	bindingsPath = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
)

// The admission chain (server/admission, which tests what it decides) is wired into the API:
// configuration written through the API comes into force, a denial is answered as a Status,
// and a policy's warning reaches the response's Warning header.
func TestValidatingAdmissionPolicyDeniesAndWarns(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", policiesPath, admissiontest.DenyingPolicy).expect(t, http.StatusCreated)
	api.do("POST", bindingsPath, admissiontest.Binding("no-forbidden-binding", "no-forbidden", `["Deny"]`)).expect(t, http.StatusCreated)
	bad := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad"},"data":{"forbidden":"x"}}`
	var denied response
	controllertest.Eventually(t, "the policy denies", func() bool {
		denied = api.do("POST", "/api/v1/namespaces/default/configmaps?dryRun=All", bad)
		return denied.code == http.StatusUnprocessableEntity
	})
	denied.expectStatus(t, metav1.Status{Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
		Message: "configmaps \"bad\" is forbidden: ValidatingAdmissionPolicy 'no-forbidden' with binding 'no-forbidden-binding' denied request: key forbidden in bad",
		Details: &metav1.StatusDetails{Name: "bad", Kind: "configmaps", Causes: []metav1.StatusCause{{Message: "ValidatingAdmissionPolicy 'no-forbidden' with binding 'no-forbidden-binding' denied request: key forbidden in bad"}}}})
	api.do("POST", "/api/v1/namespaces/default/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"good"},"data":{"fine":"x"}}`).expect(t, http.StatusCreated)

	// Warn instead of Deny: the write goes through with a Warning header. (kube's strategy of
	// bindings refuses an update that names no resourceVersion: a patch names the current one.)
	api.do("PATCH", bindingsPath+"/no-forbidden-binding", `{"spec":{"validationActions":["Warn"]}}`, mergePatch).expect(t, http.StatusOK)
	var warned response
	controllertest.Eventually(t, "the policy warns", func() bool {
		warned = api.do("POST", "/api/v1/namespaces/default/configmaps?dryRun=All", bad)
		return warned.code == http.StatusCreated
	})
	if got, want := warned.header.Get("Warning"), `299 - "Validation failed for ValidatingAdmissionPolicy 'no-forbidden' with binding 'no-forbidden-binding': key forbidden in bad"`; got != want {
		t.Errorf("Warning %q, want %q", got, want)
	}
}

func TestAdmissionTypesAreServedAndValidated(t *testing.T) {
	api := sqliteAPI(t)
	r := api.do("POST", bindingsPath, admissiontest.Binding("b", "", `["Deny","Warn","Nope"]`)).expect(t, http.StatusUnprocessableEntity)
	for _, want := range []string{"spec.policyName: Required value", `spec.validationActions[2]: Unsupported value: \"Nope\"`, "must not contain both Deny and Warn"} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("%s does not say %q", r.body, want)
		}
	}
	bad := `{"metadata":{"name":"bad"},"webhooks":[{"name":"short","clientConfig":{"url":"http://127.0.0.1/"},"admissionReviewVersions":["v2"],"timeoutSeconds":31}]}`
	r = api.do("POST", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", bad).expect(t, http.StatusUnprocessableEntity)
	for _, want := range []string{`webhooks[0].name: Invalid value: \"short\": should be a domain with at least three segments separated by dots`,
		`webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme`,
		"webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
		"webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
		`webhooks[0].admissionReviewVersions: Invalid value: [\"v2\"]: must include at least one of v1, v1beta1`} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("%s does not say %q", r.body, want)
		}
	}
	webhook := `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"w"},
		"webhooks":[{"name":"deny.example.com","clientConfig":{"url":"https://127.0.0.1:1/"},"sideEffects":"None","admissionReviewVersions":["v1"]}]}`
	created := api.do("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", webhook).expect(t, http.StatusCreated).object(t)
	hook := nested(created, "webhooks").([]any)[0].(map[string]any)
	if hook["failurePolicy"] != "Fail" || hook["matchPolicy"] != "Equivalent" || hook["timeoutSeconds"] != float64(10) {
		t.Errorf("webhook not defaulted as kube does: %v", hook)
	}
	table := api.do("GET", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", "", "Accept: application/json;as=Table;v=v1;g=meta.k8s.io").expect(t, http.StatusOK).object(t)
	if row := nested(table, "rows").([]any)[0].(map[string]any)["cells"].([]any); row[0] != "w" || row[1] != float64(1) {
		t.Errorf("table row %v, want w with 1 webhook", row)
	}
}
