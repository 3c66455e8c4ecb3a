package admission

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sqlkube/sqlkube/server/admission/admissiontest"
)

// renameCount is a conversion webhook for Cogs: v1 has spec.teeth, v2 spec.count.
func renameCount(w http.ResponseWriter, r *http.Request) {
	var review apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not a ConversionReview", http.StatusBadRequest)
		return
	}
	resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	from, to := "count", "teeth"
	if review.Request.DesiredAPIVersion == "example.com/v2" {
		from, to = to, from
	}
	for _, raw := range review.Request.Objects {
		var obj map[string]any
		_ = json.Unmarshal(raw.Raw, &obj)
		spec, _ := obj["spec"].(map[string]any)
		obj["spec"], obj["apiVersion"] = map[string]any{to: spec[from]}, review.Request.DesiredAPIVersion
		converted, _ := json.Marshal(obj)
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: converted})
	}
	review.Request, review.Response = nil, resp
	_ = json.NewEncoder(w).Encode(&review)
}

// A policy on v1 admits a write through v2 with the object converted by the CRD's conversion
// webhook, as kube's matchPolicy Equivalent does.
func TestPolicyMatchesVersionsConvertedByWebhook(t *testing.T) {
	hook := httptest.NewTLSServer(http.HandlerFunc(renameCount))
	t.Cleanup(hook.Close)
	versionSchema := `"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"teeth":{"type":"integer"},"count":{"type":"integer"}}}}}}`
	cogCRD := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"cogs.example.com"},"spec":{"group":"example.com","scope":"Namespaced",
	"names":{"plural":"cogs","singular":"cog","kind":"Cog","listKind":"CogList"},
	"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"` + hook.URL + `","caBundle":` + admissiontest.CABundle(hook) + `}}},
	"versions":[{"name":"v1","served":true,"storage":true,` + versionSchema + `},{"name":"v2","served":true,"storage":false,` + versionSchema + `}]}}`
	h := newHarness(t, harnessConfig{crds: []string{cogCRD}, objects: []string{
		`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"few-teeth"},"spec":{
		"matchConstraints":{"resourceRules":[{"apiGroups":["example.com"],"apiVersions":["v1"],"operations":["CREATE"],"resources":["cogs"]}]},
		"validations":[{"expression":"object.spec.teeth <= 10","messageExpression":"'at most 10 teeth in ' + object.apiVersion"}]}}`,
		admissiontest.Binding("few-teeth", "few-teeth", `["Deny"]`)}})
	cogsV2 := schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "cogs"}
	cog := func(name string, count int) string {
		return `{"apiVersion":"example.com/v2","kind":"Cog","metadata":{"name":"` + name + `"},"spec":{"count":` + strconv.Itoa(count) + `}}`
	}
	ctx := asAlice(t.Context())
	if _, err := h.create(ctx, cogsV2, cog("big", 11), true); err == nil || !strings.HasSuffix(err.Error(), "denied request: at most 10 teeth in example.com/v1") {
		t.Errorf("11 through v2: %v, want the policy's denial of the converted object", err)
	}
	if _, err := h.create(ctx, cogsV2, cog("small", 10), false); err != nil {
		t.Error(err)
	}
}
