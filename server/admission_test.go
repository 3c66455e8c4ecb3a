package server

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	policiesPath = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
	bindingsPath = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
)

// denyingPolicy refuses ConfigMaps with data.forbidden, with a message built by CEL.
const denyingPolicy = `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy",
	"metadata":{"name":"no-forbidden"},
	"spec":{"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["configmaps"]}]},
	"validations":[{"expression":"!has(object.data) || !('forbidden' in object.data)","messageExpression":"'key forbidden in ' + object.metadata.name"}]}}`

func binding(name, policy, actions string) string {
	return `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"` + name +
		`"},"spec":{"policyName":"` + policy + `","validationActions":` + actions + `}}`
}

func TestValidatingAdmissionPolicyDeniesAndWarns(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", policiesPath, denyingPolicy).expect(t, http.StatusCreated)
	api.do("POST", bindingsPath, binding("no-forbidden-binding", "no-forbidden", `["Deny"]`)).expect(t, http.StatusCreated)
	bad := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad"},"data":{"forbidden":"x"}}`
	var denied response
	eventually(t, "the policy denies", func() bool {
		denied = api.do("POST", "/api/v1/namespaces/default/configmaps?dryRun=All", bad)
		return denied.code == http.StatusUnprocessableEntity
	})
	denied.expectStatus(t, metav1.Status{Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
		Message: "configmaps \"bad\" is forbidden: ValidatingAdmissionPolicy 'no-forbidden' with binding 'no-forbidden-binding' denied request: key forbidden in bad",
		Details: &metav1.StatusDetails{Name: "bad", Kind: "configmaps", Causes: []metav1.StatusCause{{Message: "ValidatingAdmissionPolicy 'no-forbidden' with binding 'no-forbidden-binding' denied request: key forbidden in bad"}}}})
	api.do("POST", "/api/v1/namespaces/default/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"good"},"data":{"fine":"x"}}`).expect(t, http.StatusCreated)
	// Updates are checked too, whatever the way: a merge patch adding the key is denied.
	api.do("PATCH", "/api/v1/namespaces/default/configmaps/good", `{"data":{"forbidden":"y"}}`, "Content-Type: application/merge-patch+json").expect(t, http.StatusUnprocessableEntity)

	// Warn instead of Deny: the write goes through with a Warning header.
	api.do("PUT", bindingsPath+"/no-forbidden-binding", binding("no-forbidden-binding", "no-forbidden", `["Warn"]`)).expect(t, http.StatusOK)
	var warned response
	eventually(t, "the policy warns", func() bool {
		warned = api.do("POST", "/api/v1/namespaces/default/configmaps?dryRun=All", bad)
		return warned.code == http.StatusCreated
	})
	if got, want := warned.header.Get("Warning"), `299 - "Validation failed for ValidatingAdmissionPolicy 'no-forbidden' with binding 'no-forbidden-binding': key forbidden in bad"`; got != want {
		t.Errorf("Warning %q, want %q", got, want)
	}
}

func TestAdmissionTypesAreServedAndValidated(t *testing.T) {
	api := sqliteAPI(t)
	r := api.do("POST", bindingsPath, binding("b", "", `["Deny","Warn","Nope"]`)).expect(t, http.StatusUnprocessableEntity)
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
		"webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1"} {
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

func TestMutatingAdmissionPolicyPatches(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies", `{"metadata":{"name":"label"},"spec":{
		"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]},
		"mutations":[{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":"Object{metadata: Object.metadata{labels: {'mutated': 'yes'}}}"}}]}}`).expect(t, http.StatusCreated)
	api.do("POST", "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings", `{"metadata":{"name":"label"},"spec":{"policyName":"label"}}`).expect(t, http.StatusCreated)
	eventually(t, "the policy labels new ConfigMaps", func() bool {
		created := api.do("POST", "/api/v1/namespaces/default/configmaps?dryRun=All", `{"metadata":{"name":"cm"}}`).expect(t, http.StatusCreated).object(t)
		return str(created, "metadata", "labels", "mutated") == "yes"
	})
}

func TestValidatingAdmissionPolicyOnCustomResources(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgetCRD).expect(t, http.StatusCreated)
	api.do("POST", policiesPath, `{"metadata":{"name":"no-black"},"spec":{
		"matchConstraints":{"resourceRules":[{"apiGroups":["example.com"],"apiVersions":["*"],"operations":["*"],"resources":["widgets","widgets/status"]}]},
		"validations":[{"expression":"request.operation == 'DELETE' || object.spec.color != 'black'","messageExpression":"'no black ' + request.kind.version"}]}}`).expect(t, http.StatusCreated)
	api.do("POST", bindingsPath, binding("no-black", "no-black", `["Deny"]`)).expect(t, http.StatusCreated)
	black := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"b"},"spec":{"color":"black"}}`
	eventually(t, "the policy denies", func() bool {
		return api.do("POST", widgets+"?dryRun=All", black).code == http.StatusUnprocessableEntity
	})
	v2 := strings.Replace(widgets, "/v1/", "/v2/", 1)
	r := api.do("POST", v2, strings.Replace(black, "example.com/v1", "example.com/v2", 1)).expect(t, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), "no black v2\"") {
		t.Errorf("v2 create: %s, want the policy to see v2", r.body)
	}
	w := api.do("POST", widgets, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"red"}}`).expect(t, http.StatusCreated).object(t)
	rv := str(w, "metadata", "resourceVersion")
	// Custom resources' status strategy keeps the spec: the status subresource is admitted with
	// the object as it would be stored.
	api.do("PUT", widgets+"/w/status", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","resourceVersion":"`+rv+`"},"spec":{"color":"black"},"status":{"ready":true}}`).expect(t, http.StatusOK)
	r = api.do("PATCH", widgets+"/w", `{"spec":{"color":"black"}}`, "Content-Type: application/merge-patch+json").expect(t, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), "no black v1\"") {
		t.Errorf("patch: %s", r.body)
	}
}

func TestValidatingAdmissionPolicyTypeChecking(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", policiesPath, `{"metadata":{"name":"typo"},"spec":{
		"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]},
		"validations":[{"expression":"object.spec.replicas > 1"}]}}`).expect(t, http.StatusCreated)
	var status map[string]any
	eventually(t, "the policy's status is written", func() bool {
		policy := api.do("GET", policiesPath+"/typo", "").expect(t, http.StatusOK).object(t)
		status, _ = policy["status"].(map[string]any)
		return status != nil && status["observedGeneration"] == float64(1)
	})
	warnings := nested(status, "typeChecking", "expressionWarnings").([]any)
	warning := warnings[0].(map[string]any)
	if warning["fieldRef"] != "spec.validations[0].expression" || !strings.Contains(warning["warning"].(string), "undefined field 'spec'") {
		t.Errorf("type checking warnings %v", warnings)
	}
}

// With matchPolicy Equivalent (the default), a policy on one version of a custom resource
// admits requests to its other versions, with the object converted to the version it matched.
func TestValidatingAdmissionPolicyMatchesEquivalentVersions(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgetCRD).expect(t, http.StatusCreated)
	api.do("POST", policiesPath, `{"metadata":{"name":"no-black"},"spec":{
		"matchConstraints":{"resourceRules":[{"apiGroups":["example.com"],"apiVersions":["v1"],"operations":["CREATE"],"resources":["widgets"]}]},
		"validations":[{"expression":"object.spec.color != 'black'","messageExpression":"'no black ' + object.apiVersion + ' in ' + request.kind.version + ' for ' + request.requestKind.version"}]}}`).expect(t, http.StatusCreated)
	api.do("POST", bindingsPath, binding("no-black", "no-black", `["Deny"]`)).expect(t, http.StatusCreated)
	v2 := strings.Replace(widgets, "/v1/", "/v2/", 1)
	black := `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"b"},"spec":{"color":"black"}}`
	var r response
	eventually(t, "the policy denies", func() bool {
		r = api.do("POST", v2+"?dryRun=All", black)
		return r.code == http.StatusUnprocessableEntity
	})
	if !strings.Contains(string(r.body), "no black example.com/v1 in v1 for v2\"") {
		t.Errorf("v2 create: %s, want the policy to see the object in v1", r.body)
	}
	created := api.do("POST", v2, strings.Replace(black, "black", "red", 1)).expect(t, http.StatusCreated).object(t)
	if created["apiVersion"] != "example.com/v2" {
		t.Errorf("created %v, want it answered in v2", created)
	}
}

// A policy's parameter may be a custom resource.
func TestValidatingAdmissionPolicyWithCustomResourceParams(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgetCRD).expect(t, http.StatusCreated)
	api.do("POST", widgets, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"params"},"spec":{"color":"red"}}`).expect(t, http.StatusCreated)
	api.do("POST", policiesPath, `{"metadata":{"name":"color"},"spec":{"paramKind":{"apiVersion":"example.com/v1","kind":"Widget"},
		"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]},
		"validations":[{"expression":"!has(object.data) || !('color' in object.data) || object.data.color == params.spec.color","messageExpression":"'color must be ' + params.spec.color"}]}}`).expect(t, http.StatusCreated)
	api.do("POST", bindingsPath, `{"metadata":{"name":"color"},"spec":{"policyName":"color","validationActions":["Deny"],
		"paramRef":{"name":"params","namespace":"default","parameterNotFoundAction":"Deny"}}}`).expect(t, http.StatusCreated)
	var r response
	eventually(t, "the policy denies", func() bool {
		r = api.do("POST", cmPath+"?dryRun=All", `{"metadata":{"name":"blue"},"data":{"color":"blue"}}`)
		return r.code == http.StatusUnprocessableEntity
	})
	if !strings.Contains(string(r.body), "denied request: color must be red") {
		t.Errorf("denial %s", r.body)
	}
	api.do("POST", cmPath+"?dryRun=All", `{"metadata":{"name":"red"},"data":{"color":"red"}}`).expect(t, http.StatusCreated)
}

// Through /scale, admission sees the autoscaling/v1 Scale, as on kube.
func TestValidatingAdmissionPolicyOnScale(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", sprocketCRD).expect(t, http.StatusCreated)
	api.do("POST", sprockets, `{"apiVersion":"example.com/v1","kind":"Sprocket","metadata":{"name":"s"},"spec":{"replicas":1}}`).expect(t, http.StatusCreated)
	api.do("POST", policiesPath, `{"metadata":{"name":"max-scale"},"spec":{
		"matchConstraints":{"resourceRules":[{"apiGroups":["example.com"],"apiVersions":["v1"],"operations":["UPDATE"],"resources":["sprockets/scale"]}]},
		"validations":[{"expression":"object.spec.replicas <= 5","messageExpression":"'at most 5 in a ' + object.kind + ', from ' + string(oldObject.spec.replicas)"}]}}`).expect(t, http.StatusCreated)
	api.do("POST", bindingsPath, binding("max-scale", "max-scale", `["Deny"]`)).expect(t, http.StatusCreated)
	var r response
	eventually(t, "the policy denies", func() bool {
		r = api.do("PATCH", sprockets+"/s/scale?dryRun=All", `{"spec":{"replicas":6}}`, "Content-Type: application/merge-patch+json")
		return r.code == http.StatusUnprocessableEntity
	})
	if !strings.Contains(string(r.body), "denied request: at most 5 in a Scale, from 1") {
		t.Errorf("denial %s", r.body)
	}
	scaled := decodeScaleResponse(t, api.do("PATCH", sprockets+"/s/scale", `{"spec":{"replicas":5}}`, "Content-Type: application/merge-patch+json").expect(t, http.StatusOK))
	if scaled.Spec.Replicas != 5 {
		t.Errorf("scaled to %d, want 5", scaled.Spec.Replicas)
	}
}

// A mutating webhook's change to a Scale is written to the object.
func TestMutatingWebhookOnScale(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", sprocketCRD).expect(t, http.StatusCreated)
	api.do("POST", sprockets, `{"apiVersion":"example.com/v1","kind":"Sprocket","metadata":{"name":"s"},"spec":{"replicas":1}}`).expect(t, http.StatusCreated)
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		_ = json.NewDecoder(r.Body).Decode(&review)
		patch := `[{"op":"replace","path":"/spec/replicas","value":3}]`
		if review.Request.Kind.Kind != "Scale" {
			patch = `[]`
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true, PatchType: ptr.To(admissionv1.PatchTypeJSONPatch), Patch: []byte(patch)}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(&review)
	}))
	defer hook.Close()
	caBundle, _ := json.Marshal(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}))
	api.do("POST", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", `{"metadata":{"name":"w"},"webhooks":[{
		"name":"three.example.com","clientConfig":{"url":"`+hook.URL+`","caBundle":`+string(caBundle)+`},"sideEffects":"None","admissionReviewVersions":["v1"],
		"rules":[{"apiGroups":["example.com"],"apiVersions":["v1"],"operations":["UPDATE"],"resources":["sprockets/scale"]}]}]}`).expect(t, http.StatusCreated)
	eventually(t, "the webhook sets the replicas", func() bool {
		scaled := decodeScaleResponse(t, api.do("PATCH", sprockets+"/s/scale", `{"spec":{"replicas":7}}`, "Content-Type: application/merge-patch+json").expect(t, http.StatusOK))
		return scaled.Spec.Replicas == 3
	})
	if got := api.do("GET", sprockets+"/s", "").expect(t, http.StatusOK).object(t); nested(got, "spec", "replicas") != float64(3) {
		t.Errorf("sprocket %v, want 3 replicas", got)
	}
}
