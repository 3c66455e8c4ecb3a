package admission

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/sqlkube/sqlkube/server/admission/admissiontest"
)

// validatingWebhook is a configuration calling clientConfig on creates of ConfigMaps.
func validatingWebhook(clientConfig string) string {
	return `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"w"},"webhooks":[{
		"name":"deny.example.com","clientConfig":` + clientConfig + `,"sideEffects":"None","admissionReviewVersions":["v1"],
		"rules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]}]}`
}

// A validating webhook called at its URL, over HTTPS verified by its caBundle, refuses writes.
func TestValidatingWebhookDenies(t *testing.T) {
	hook := httptest.NewTLSServer(http.HandlerFunc(admissiontest.DenyForbiddenKey))
	t.Cleanup(hook.Close)
	h := newHarness(t, harnessConfig{objects: []string{validatingWebhook(`{"url":"` + hook.URL + `","caBundle":` + admissiontest.CABundle(hook) + `}`)}})
	ctx := asAlice(t.Context())
	_, err := h.create(ctx, configMaps, forbiddenConfigMap, true)
	want := `admission webhook "deny.example.com" denied the request without explanation`
	if status := statusOf(t, err); status.Code != http.StatusBadRequest || status.Message != want {
		t.Errorf("create: %v, want 400 %q", status, want)
	}
	if _, err := h.create(ctx, configMaps, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"good"}}`, false); err != nil {
		t.Error(err)
	}
}

// A webhook given by service reference is called where Options.WebhookServices maps the
// service, and its certificate is verified for the service's cluster DNS name.
func TestWebhookServiceIsMapped(t *testing.T) {
	hook := httptest.NewUnstartedServer(http.HandlerFunc(admissiontest.DenyForbiddenKey))
	hook.TLS = &tls.Config{Certificates: []tls.Certificate{selfSigned(t, "denier.webhooks.svc")}}
	hook.StartTLS()
	t.Cleanup(hook.Close)
	service := `{"service":{"namespace":"webhooks","name":"denier","path":"/deny"},"caBundle":` + admissiontest.CABundle(hook) + `}`
	h := newHarness(t, harnessConfig{objects: []string{validatingWebhook(service)},
		webhookServices: map[string]string{"webhooks/denier": strings.TrimPrefix(hook.URL, "https://")}})
	_, err := h.create(asAlice(t.Context()), configMaps, forbiddenConfigMap, true)
	if status := statusOf(t, err); status.Code != http.StatusBadRequest || !strings.Contains(status.Message, `"deny.example.com" denied the request`) {
		t.Errorf("create: %v, want the webhook's denial", status)
	}
}

// The service resolver maps the services it is given, and resolves others by cluster DNS, at
// their port.
func TestWebhookServiceResolver(t *testing.T) {
	resolver := WebhookServiceResolver(map[string]string{"webhooks/mapped": "127.0.0.1:8443"})
	for _, tt := range []struct{ name, want string }{{"mapped", "https://127.0.0.1:8443"}, {"other", "https://other.webhooks.svc:444"}} {
		u, err := resolver.ResolveEndpoint("webhooks", tt.name, 444)
		if err != nil || u.String() != tt.want {
			t.Errorf("%s: %v, %v; want %s", tt.name, u, err, tt.want)
		}
	}
}

// selfSigned is a certificate for dnsName, signed by itself.
func selfSigned(t *testing.T, dnsName string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// A mutating webhook's change to a Scale is written to the object.
func TestMutatingWebhookOnScale(t *testing.T) {
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
	t.Cleanup(hook.Close)
	h := newHarness(t, harnessConfig{crds: []string{sprocketCRD}, objects: []string{
		`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration","metadata":{"name":"w"},"webhooks":[{
		"name":"three.example.com","clientConfig":{"url":"` + hook.URL + `","caBundle":` + admissiontest.CABundle(hook) + `},"sideEffects":"None","admissionReviewVersions":["v1"],
		"rules":[{"apiGroups":["example.com"],"apiVersions":["v1"],"operations":["UPDATE"],"resources":["sprockets/scale"]}]}]}`}})
	ref := h.sprocket()
	ctx := asAlice(t.Context())
	if scaled := h.patchScale(ctx, ref, 7); scaled.Spec.Replicas != 3 {
		t.Errorf("scaled to %d, want the webhook's 3", scaled.Spec.Replicas)
	}
	ref.Subresource = ""
	stored, err := h.registry.Get(ctx, ref, &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if replicas, _, _ := unstructured.NestedInt64(decodeStored(t, ref.Resource, stored).Object, "spec", "replicas"); replicas != 3 {
		t.Errorf("sprocket has %d replicas, want 3", replicas)
	}
}
