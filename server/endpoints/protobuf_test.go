package endpoints_test

import (
	"bytes"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/endpoints"
	"github.com/sqlkube/sqlkube/server/resource"
)

// TestProtobufBodies writes built-ins in protobuf, as client-go's typed clients can: they are
// decoded, defaulted and validated as their JSON would be.
func TestProtobufBodies(t *testing.T) {
	api := sqliteAPI(t)
	send := func(method, path string, obj runtime.Object) response {
		t.Helper()
		var body bytes.Buffer
		if err := endpoints.ProtobufDecoder.Encode(obj, &body); err != nil {
			t.Fatal(err)
		}
		return api.do(method, path, body.String(), "Content-Type: "+endpoints.MediaTypeProtobuf)
	}
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: map[string]string{"a": "b"}},
		Data:       map[string][]byte{"bin": {0, 1, 2}}, StringData: map[string]string{"text": "t"}}
	created := send("POST", "/api/v1/namespaces/default/secrets", secret).expect(t, http.StatusCreated).object(t)
	if str(created, "type") != "Opaque" || str(created, "data", "bin") != "AAEC" || str(created, "data", "text") != "dA==" ||
		nested(created, "stringData") != nil || str(created, "metadata", "labels", "a") != "b" {
		t.Errorf("created secret: %v", created)
	}

	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name"}}
	send("POST", cmPath, cm).expect(t, http.StatusUnprocessableEntity)
	send("POST", cmPath, secret).expectStatus(t, metav1.Status{Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
		Message: `Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion`})
	api.do("POST", cmPath, "not protobuf", "Content-Type: "+endpoints.MediaTypeProtobuf).expect(t, http.StatusBadRequest)
}

// Every built-in type's body may come as protobuf, as kubectl sends it.
func TestEveryBuiltinDecodesFromProtobuf(t *testing.T) {
	for _, r := range builtin.Resources(func(*resource.Resource) {}, nil) {
		gvk := schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
		if !endpoints.ProtobufScheme.Recognizes(gvk) {
			t.Errorf("%s is not in the protobuf scheme", gvk)
		}
	}
}
