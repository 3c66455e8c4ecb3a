package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	rawNamespace   = "e2e-raw"
	rawConfigMaps  = "/api/v1/namespaces/" + rawNamespace + "/configmaps"
	maxRequestBody = 3 * 1024 * 1024 // kube-apiserver's limit on a request body
)

var configMapKind = schema.GroupKind{Kind: "ConfigMap"}

// configMapJSON is a configmap body with the given apiVersion, kind and metadata.
func configMapJSON(apiVersion, kind, metadata string) []byte {
	return []byte(fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":%s,"data":{"a":"b"}}`, apiVersion, kind, metadata))
}

// badRequest is one malformed request and the exact Status kube-apiserver answers it with.
type badRequest struct {
	name        string
	method      string
	path        string
	body        []byte
	contentType string
	accept      string
	want        *apierrors.StatusError
	// wantPrefix replaces want where the message ends in build-specific details.
	wantPrefix *prefixStatus
}

type prefixStatus struct {
	code    int32
	reason  metav1.StatusReason
	message string
}

func badRequests() []badRequest {
	malformed := []byte(`{"kind":`)
	longName := strings.Repeat("a", 254)
	return []badRequest{
		{name: "malformed JSON", method: http.MethodPost, path: rawConfigMaps, body: malformed,
			want: apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type ConfigMap): %v (%s)",
				interpretError(malformed), malformed))},
		{name: "kind of another type", method: http.MethodPost, path: rawConfigMaps, body: configMapJSON("v1", "Secret", `{"name":"wrong-kind"}`),
			wantPrefix: &prefixStatus{400, metav1.StatusReasonBadRequest, `Secret in version "v1" cannot be handled as a ConfigMap: `}},
		{name: "apiVersion of another group", method: http.MethodPost, path: rawConfigMaps, body: configMapJSON("apps/v1", "ConfigMap", `{"name":"wrong-group"}`),
			wantPrefix: &prefixStatus{400, metav1.StatusReasonBadRequest,
				`ConfigMap in version "v1" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "apps/v1"`}},
		{name: "missing name", method: http.MethodPost, path: rawConfigMaps, body: configMapJSON("v1", "ConfigMap", `{}`),
			want: apierrors.NewInvalid(configMapKind, "", field.ErrorList{
				field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})},
		{name: "upper case name", method: http.MethodPost, path: rawConfigMaps, body: configMapJSON("v1", "ConfigMap", `{"name":"Bad_Name"}`),
			want: invalidName(configMapKind, "Bad_Name", validation.NameIsDNSSubdomain)},
		{name: "name with a slash", method: http.MethodPost, path: rawConfigMaps, body: configMapJSON("v1", "ConfigMap", `{"name":"a/b"}`),
			want: invalidName(configMapKind, "a/b", validation.NameIsDNSSubdomain)},
		{name: "name too long", method: http.MethodPost, path: rawConfigMaps, body: configMapJSON("v1", "ConfigMap", `{"name":"`+longName+`"}`),
			want: invalidName(configMapKind, longName, validation.NameIsDNSSubdomain)},
		{name: "unknown namespace", method: http.MethodPost, path: "/api/v1/namespaces/nope/configmaps", body: configMapJSON("v1", "ConfigMap", `{"name":"x"}`),
			want: apierrors.NewNotFound(namespaces, "nope")},
		{name: "namespace differs from the path", method: http.MethodPost, path: rawConfigMaps, body: configMapJSON("v1", "ConfigMap", `{"name":"x","namespace":"other"}`),
			want: apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")},
		{name: "name differs from the path", method: http.MethodPut, path: rawConfigMaps + "/x", body: configMapJSON("v1", "ConfigMap", `{"name":"y"}`),
			want: apierrors.NewBadRequest("the name of the object (y) does not match the name on the URL (x)")},
		{name: "oversized body", method: http.MethodPost, path: rawConfigMaps, body: oversizedConfigMap(),
			want: apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxRequestBody))},
		{name: "unsupported content type", method: http.MethodPost, path: rawConfigMaps, body: configMapJSON("v1", "ConfigMap", `{"name":"x"}`), contentType: "text/plain",
			wantPrefix: &prefixStatus{415, metav1.StatusReasonUnsupportedMediaType,
				"the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"}},
		{name: "PUT on a collection", method: http.MethodPut, path: rawConfigMaps, body: configMapJSON("v1", "ConfigMap", `{"name":"x"}`),
			want: apierrors.NewGenericServerResponse(http.StatusMethodNotAllowed, "", schema.GroupResource{}, "", "", 0, false)},
		{name: "POST on an object", method: http.MethodPost, path: rawConfigMaps + "/x", body: configMapJSON("v1", "ConfigMap", `{"name":"x"}`),
			want: apierrors.NewGenericServerResponse(http.StatusMethodNotAllowed, "", schema.GroupResource{}, "", "", 0, false)},
		{name: "Accept not satisfiable", method: http.MethodGet, path: rawConfigMaps, accept: "application/xml",
			wantPrefix: &prefixStatus{406, metav1.StatusReasonNotAcceptable,
				"only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"}},
	}
}

// interpretError is the error kube-apiserver's JSON decoder gives for body when it looks for the
// object's kind.
func interpretError(body []byte) error {
	_, err := kjson.DefaultMetaFactory.Interpret(body)
	return err
}

// oversizedConfigMap is a valid configmap one byte over kube-apiserver's body limit.
func oversizedConfigMap() []byte {
	head := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"huge"},"data":{"a":"`)
	tail := []byte(`"}}`)
	fill := bytes.Repeat([]byte("x"), maxRequestBody+1-len(head)-len(tail))
	return bytes.Join([][]byte{head, fill, tail}, nil)
}

func TestBadInput(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		createNamespace(t, s.clientset(), rawNamespace)
		for _, tc := range badRequests() {
			t.Run(tc.name, func(t *testing.T) {
				contentType := tc.contentType
				if contentType == "" && tc.body != nil {
					contentType = "application/json"
				}
				accept := tc.accept
				if accept == "" {
					accept = "application/json"
				}
				resp := s.do(t, tc.method, tc.path, tc.body, "Content-Type", contentType, "Accept", accept)
				got := resp.status(t)
				if tc.wantPrefix != nil {
					assertStatusPrefix(t, got, tc.wantPrefix.code, tc.wantPrefix.reason, tc.wantPrefix.message)
				} else {
					assertStatus(t, got, tc.want)
				}
				if resp.code != int(got.Code) {
					t.Errorf("HTTP status %d, Status code %d", resp.code, got.Code)
				}
			})
		}
		// A path that names no resource is answered, as kube-apiserver does, with net/http's
		// plain-text 404 (clients make a NotFound Status of it themselves).
		resp := s.do(t, http.MethodPost, "/api/v1/namespaces/"+rawNamespace+"/widgets", configMapJSON("v1", "ConfigMap", `{"name":"x"}`), "Content-Type", "application/json")
		if resp.code != http.StatusNotFound || resp.header.Get("Content-Type") != "text/plain; charset=utf-8" || string(resp.body) != "404 page not found\n" {
			t.Errorf("unknown resource: %d %q %q, want net/http's plain-text 404", resp.code, resp.header.Get("Content-Type"), resp.body)
		}
		assertNothingStored(t, s)
	})
}

// assertNothingStored checks that no rejected request left an object behind.
func assertNothingStored(t *testing.T, s *sqlkubeServer) {
	t.Helper()
	for _, ns := range []string{rawNamespace, "nope", "other"} {
		list, err := s.clientset().CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Errorf("list configmaps in %s: %v", ns, err)
		} else if got := clientNames(t, list); len(got) != 0 {
			t.Errorf("configmaps in %s after rejected requests: %v; want none", ns, got)
		}
	}
	if _, err := s.clientset().CoreV1().Namespaces().Get(ctx, "nope", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace nope after a create in it was refused: %v, want NotFound", err)
	}
}
