package endpoints_test

import (
	"cmp"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBuiltinBodyErrors checks the answers to built-in bodies that do not decode as their type,
// or are of another type, as kube-apiserver words them.
func TestBuiltinBodyErrors(t *testing.T) {
	api := sqliteAPI(t)
	const leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
	badRequest := func(message string) metav1.Status {
		return metav1.Status{Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest, Message: message}
	}
	for _, tc := range []struct {
		name, path, body, contentType string
		want                          metav1.Status
	}{{
		name: "1.0 in an integer field", path: leases,
		body: `{"metadata":{"name":"l"},"spec":{"leaseDurationSeconds":15.0}}`,
		want: badRequest(`Lease in version "v1" cannot be handled as a Lease: json: cannot unmarshal number 15.0 into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32`),
	}, {
		name: "metadata of the wrong type", path: cmPath,
		body: `{"metadata":{"name":7}}`,
		want: badRequest(`ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string`),
	}, {
		name: "a duplicate of the wrong type", path: cmPath,
		body: `{"metadata":{"name":"c"},"data":{"a":1,"a":"1"}}`,
		want: badRequest(`ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string`),
	}, {
		name: "null", path: cmPath, body: `null`,
		want: badRequest(`the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: not an object (6e756c6c)`),
	}, {
		name: "a kind that is not a string", path: cmPath, body: `{"kind":1,"data":{"a":1}}`,
		want: badRequest(`the object provided is unrecognized (must be of type ConfigMap): kind must be a string ({"kind":1,"data":{"a":1}})`),
	}, {
		name: "another kind, with fields the type does not know", path: cmPath + "?fieldValidation=Strict",
		body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"type":"Opaque"}`,
		want: badRequest(`Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion`),
	}, {
		name: "another kind, that does not decode as the type", path: cmPath,
		body: "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {a: [1]}\n", contentType: "application/yaml",
		want: badRequest(`Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion`),
	}, {
		name: "another group", path: cmPath + "?fieldValidation=Strict",
		body: `{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"c"},"extra":1}`,
		want: badRequest(`ConfigMap in version "v1" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "apps/v1" in scheme "pkg/api/legacyscheme/scheme.go:30"`),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			api.do("POST", tc.path, tc.body, "Content-Type: "+cmp.Or(tc.contentType, "application/json")).expectStatus(t, tc.want)
		})
	}
	t.Run("1.0 in an integer field of a YAML body", func(t *testing.T) {
		// YAML has no integer 1.0: converted to JSON, it is 1, as in kube-apiserver.
		created := api.do("POST", leases, "metadata: {name: l}\nspec: {leaseDurationSeconds: 15.0}\n", "Content-Type: application/yaml").expect(t, http.StatusCreated)
		if got := nested(created.object(t), "spec", "leaseDurationSeconds"); got != float64(15) {
			t.Errorf("leaseDurationSeconds = %v", got)
		}
	})
}

// TestBuiltinValidationHTTP checks that the rules reach clients as kube-apiserver's 422 Status.
func TestBuiltinValidationHTTP(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		t.Run("configmap key", func(t *testing.T) {
			api.do("POST", cmPath, `{"metadata":{"name":"bk"},"data":{"bad key!":"x"}}`).expectStatus(t, metav1.Status{
				Code: 422, Reason: metav1.StatusReasonInvalid,
				Message: `ConfigMap "bk" is invalid: data[bad key!]: Invalid value: "bad key!": ` + configKeyMsg,
				Details: &metav1.StatusDetails{Name: "bk", Kind: "ConfigMap", Causes: []metav1.StatusCause{{
					Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: "bad key!": ` + configKeyMsg, Field: "data[bad key!]"}}},
			})
		})
		t.Run("immutable configmap", func(t *testing.T) {
			api.do("POST", cmPath, `{"metadata":{"name":"frozen"},"immutable":true,"data":{"a":"1"}}`).expect(t, 201)
			api.do("PUT", cmPath+"/frozen", `{"metadata":{"name":"frozen"},"immutable":true,"data":{"a":"2"}}`).expectStatus(t, metav1.Status{
				Code: 422, Reason: metav1.StatusReasonInvalid,
				Message: "ConfigMap \"frozen\" is invalid: data: Forbidden: field is immutable when `immutable` is set",
				Details: &metav1.StatusDetails{Name: "frozen", Kind: "ConfigMap", Causes: []metav1.StatusCause{{
					Type: metav1.CauseTypeForbidden, Message: "Forbidden: field is immutable when `immutable` is set", Field: "data"}}},
			})
		})
		t.Run("tls secret", func(t *testing.T) {
			api.do("POST", "/api/v1/namespaces/default/secrets", `{"metadata":{"name":"cert"},"type":"kubernetes.io/tls"}`).expectStatus(t, metav1.Status{
				Code: 422, Reason: metav1.StatusReasonInvalid,
				Message: `Secret "cert" is invalid: [data[tls.crt]: Required value, data[tls.key]: Required value]`,
				Details: &metav1.StatusDetails{Name: "cert", Kind: "Secret", Causes: []metav1.StatusCause{
					{Type: metav1.CauseTypeFieldValueRequired, Message: "Required value", Field: "data[tls.crt]"},
					{Type: metav1.CauseTypeFieldValueRequired, Message: "Required value", Field: "data[tls.key]"}}},
			})
		})
		t.Run("lease duration", func(t *testing.T) {
			api.do("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", `{"metadata":{"name":"l"},"spec":{"leaseDurationSeconds":0}}`).expectStatus(t, metav1.Status{
				Code: 422, Reason: metav1.StatusReasonInvalid,
				Message: `Lease.coordination.k8s.io "l" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0`,
				Details: &metav1.StatusDetails{Name: "l", Group: "coordination.k8s.io", Kind: "Lease", Causes: []metav1.StatusCause{{
					Type: metav1.CauseTypeFieldValueInvalid, Message: "Invalid value: 0: must be greater than 0", Field: "spec.leaseDurationSeconds"}}},
			})
		})
	})
}

// configKeyMsg is IsConfigMapKey's message for a key with characters it does not allow.
const configKeyMsg = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
