package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// testCA is a certificate authority the tests' webhook servers are signed by.
type testCA struct {
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	bundle []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "webhook test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, bundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// serve starts an HTTPS server for handler with a certificate the CA signed for 127.0.0.1 and
// for the cluster DNS names given.
func (ca *testCA) serve(t *testing.T, handler http.Handler, dnsNames ...string) *httptest.Server {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "webhook"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: dnsNames,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(handler)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// reviewHandler answers AdmissionReviews with what respond makes of each request.
func reviewHandler(t *testing.T, respond func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			t.Errorf("webhook got no AdmissionReview: %v", err)
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		response := respond(review.Request)
		response.UID = review.Request.UID
		review.Request, review.Response = nil, response
		_ = json.NewEncoder(w).Encode(&review)
	})
}

// configMapRules match ConfigMap creates and updates.
var configMapRules = []admissionregistrationv1.RuleWithOperations{{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
	Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
}}

func validatingHook(name string, cc admissionregistrationv1.WebhookClientConfig, failure admissionregistrationv1.FailurePolicyType) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{Name: name, ClientConfig: cc, Rules: configMapRules,
		FailurePolicy: ptr.To(failure), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](5),
		ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"test": name}}}
}

func withTimeout(hook admissionregistrationv1.ValidatingWebhook, seconds int32) admissionregistrationv1.ValidatingWebhook {
	hook.TimeoutSeconds = ptr.To(seconds)
	return hook
}

// reinvokedHook is a mutating webhook at url for ConfigMaps labelled test=reinvoke, called again
// if needed.
func reinvokedHook(name, url string, caBundle []byte) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{Name: name, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url), CABundle: caBundle},
		Rules: configMapRules, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
		ReinvocationPolicy: ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
		ObjectSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"test": "reinvoke"}}}
}

// createUntil creates cm dry-run until check accepts the outcome (the server's admission
// informers see a new configuration soon after it is written), then returns the outcome.
func createUntil(t *testing.T, client kubernetes.Interface, cm *corev1.ConfigMap, what string, check func(*corev1.ConfigMap, error) bool) (*corev1.ConfigMap, error) {
	t.Helper()
	var got *corev1.ConfigMap
	var err error
	eventually(t, 10*time.Second, what, func() (bool, error) {
		got, err = client.CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return check(got, err), err
	})
	return got, err
}

func labelledConfigMap(name, label string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"test": label}}, Data: data}
}

func TestAdmissionWebhooks(t *testing.T) {
	ca := newTestCA(t)
	denier := ca.serve(t, reviewHandler(t, func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Code: http.StatusForbidden, Message: "no configmaps named " + req.Name}}
	}))
	patch := `[{"op":"add","path":"/data/added","value":"by webhook"}]`
	mutator := ca.serve(t, reviewHandler(t, func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true, PatchType: ptr.To(admissionv1.PatchTypeJSONPatch), Patch: []byte(patch)}
	}), "mutator.webhooks.svc")
	dead := "https://127.0.0.1:1/"
	slow := ca.serve(t, reviewHandler(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		time.Sleep(2 * time.Second)
		return &admissionv1.AdmissionResponse{Allowed: true}
	}))
	var firstCalls atomic.Int32
	addKey := func(key string, calls *atomic.Int32) http.Handler {
		return reviewHandler(t, func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			calls.Add(1)
			var cm corev1.ConfigMap
			_ = json.Unmarshal(req.Object.Raw, &cm)
			if _, done := cm.Data[key]; done {
				return &admissionv1.AdmissionResponse{Allowed: true}
			}
			op := fmt.Sprintf(`[{"op":"add","path":"/data/%s","value":"%d"}]`, key, len(cm.Data))
			return &admissionv1.AdmissionResponse{Allowed: true, PatchType: ptr.To(admissionv1.PatchTypeJSONPatch), Patch: []byte(op)}
		})
	}
	first, second := ca.serve(t, addKey("first", &firstCalls)), ca.serve(t, addKey("second", new(atomic.Int32)))
	forEachServerWith(t, []string{"--webhook-service-resolver=webhooks/mutator=" + strings.TrimPrefix(mutator.URL, "https://")}, func(t *testing.T, s *sqlkubeServer) {
		ctx, client := context.Background(), s.clientset()
		hooks := client.AdmissionregistrationV1()
		_, err := hooks.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "validating"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{
				validatingHook("deny.example.com", admissionregistrationv1.WebhookClientConfig{URL: ptr.To(denier.URL), CABundle: ca.bundle}, admissionregistrationv1.Fail),
				validatingHook("dead-ignored.example.com", admissionregistrationv1.WebhookClientConfig{URL: ptr.To(dead), CABundle: ca.bundle}, admissionregistrationv1.Ignore),
				validatingHook("dead-failing.example.com", admissionregistrationv1.WebhookClientConfig{URL: ptr.To(dead), CABundle: ca.bundle}, admissionregistrationv1.Fail),
				withTimeout(validatingHook("slow.example.com", admissionregistrationv1.WebhookClientConfig{URL: ptr.To(slow.URL), CABundle: ca.bundle}, admissionregistrationv1.Fail), 1),
			}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = hooks.MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "mutating"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mutate.example.com",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: ca.bundle,
					Service: &admissionregistrationv1.ServiceReference{Namespace: "webhooks", Name: "mutator", Path: ptr.To("/mutate")}},
				Rules: configMapRules, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
				ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"test": "mutate.example.com"}}},
				reinvokedHook("first.example.com", first.URL, ca.bundle), reinvokedHook("second.example.com", second.URL, ca.bundle)},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}

		_, err = createUntil(t, client, labelledConfigMap("denied", "deny.example.com", nil), "the validating webhook denies", func(_ *corev1.ConfigMap, err error) bool { return err != nil })
		assertAPIError(t, err, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden,
			Message: `admission webhook "deny.example.com" denied the request: no configmaps named denied`}})

		mutated, _ := createUntil(t, client, labelledConfigMap("mutated", "mutate.example.com", map[string]string{"own": "x"}), "the mutating webhook patches",
			func(cm *corev1.ConfigMap, err error) bool { return err == nil && cm.Data["added"] != "" })
		if mutated.Data["added"] != "by webhook" || mutated.Data["own"] != "x" {
			t.Errorf("mutated data %v, want the webhook's key added", mutated.Data)
		}

		// A dead webhook that may be ignored is; one that may not fails the write, as kube does.
		if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, labelledConfigMap("ignored", "dead-ignored.example.com", nil), metav1.CreateOptions{}); err != nil {
			t.Errorf("create past a dead webhook with failurePolicy Ignore: %v", err)
		}
		_, err = client.CoreV1().ConfigMaps("default").Create(ctx, labelledConfigMap("failed", "dead-failing.example.com", nil), metav1.CreateOptions{})
		if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `failed calling webhook "dead-failing.example.com"`) {
			t.Errorf("create past a dead webhook with failurePolicy Fail: %v, want kube's 500 naming the webhook", err)
		}
		// A webhook slower than its timeoutSeconds fails the write.
		_, err = client.CoreV1().ConfigMaps("default").Create(ctx, labelledConfigMap("slow", "slow.example.com", nil), metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), `failed calling webhook "slow.example.com"`) || !strings.Contains(err.Error(), "deadline exceeded") {
			t.Errorf("create past a webhook slower than its timeout: %v", err)
		}

		// The first webhook asks to be called again if a later one changes the object: the
		// second adds a key after it, so it is called twice and sees the second's key.
		reinvoked, err := client.CoreV1().ConfigMaps("default").Create(ctx, labelledConfigMap("reinvoked", "reinvoke", map[string]string{"own": "x"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if calls := firstCalls.Swap(0); calls != 2 || reinvoked.Data["first"] != "1" || reinvoked.Data["second"] != "2" {
			t.Errorf("first webhook called %d times, data %v; want it reinvoked once after the second's patch", calls, reinvoked.Data)
		}
	})
}

// maxKeysPolicy refuses labelled ConfigMaps with more keys than its parameter (a ConfigMap)
// allows, and their deletion while labelled protected.
var maxKeysPolicy = &admissionregistrationv1.ValidatingAdmissionPolicy{
	ObjectMeta: metav1.ObjectMeta{Name: "max-keys"},
	Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
		ParamKind: &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
		MatchConstraints: &admissionregistrationv1.MatchResources{
			ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"test": "max-keys"}},
			ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}}}},
		Validations: []admissionregistrationv1.Validation{
			{Expression: "request.operation == 'DELETE' || !has(object.data) || object.data.size() <= int(params.data.max)",
				MessageExpression: "'at most ' + params.data.max + ' keys'"},
			{Expression: "request.operation != 'DELETE' || !has(oldObject.metadata.labels.protected)", Message: "protected"},
		},
	},
}

func maxKeysBinding(name string, actions ...admissionregistrationv1.ValidationAction) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "max-keys", ValidationActions: actions,
			ParamRef: &admissionregistrationv1.ParamRef{Name: "limits", Namespace: "default", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)}}}
}

func TestValidatingAdmissionPolicies(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		ctx, client := context.Background(), s.clientset()
		configMaps := client.CoreV1().ConfigMaps("default")
		if _, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "limits"}, Data: map[string]string{"max": "1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		policies := client.AdmissionregistrationV1()
		if _, err := policies.ValidatingAdmissionPolicies().Create(ctx, maxKeysPolicy, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := policies.ValidatingAdmissionPolicyBindings().Create(ctx, maxKeysBinding("max-keys-deny", admissionregistrationv1.Deny), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		big := labelledConfigMap("big", "max-keys", map[string]string{"a": "1", "b": "2"})
		_, err := createUntil(t, client, big, "the policy denies", func(_ *corev1.ConfigMap, err error) bool { return err != nil })
		message := "ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-deny' denied request: at most 1 keys"
		assertAPIError(t, err, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity,
			Reason: metav1.StatusReasonInvalid, Message: `configmaps "big" is forbidden: ` + message,
			Details: &metav1.StatusDetails{Name: "big", Kind: "configmaps", Causes: []metav1.StatusCause{{Message: message}}}}})

		// The parameter is read as it changes: two keys are now allowed.
		if _, err := configMaps.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "limits"}, Data: map[string]string{"max": "2"}}, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		createUntil(t, client, big, "the new parameter allows two keys", func(_ *corev1.ConfigMap, err error) bool { return err == nil })

		// Deletes are admitted with the object deleted as oldObject.
		protected := labelledConfigMap("protected", "max-keys", nil)
		protected.Labels["protected"] = "yes"
		if _, err := configMaps.Create(ctx, protected, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		err = configMaps.Delete(ctx, "protected", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "denied request: protected") {
			t.Errorf("delete of a protected ConfigMap: %v, want the policy's denial", err)
		}

		// Warn: the write succeeds with the failure in a Warning header.
		if err := policies.ValidatingAdmissionPolicyBindings().Delete(ctx, "max-keys-deny", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := policies.ValidatingAdmissionPolicyBindings().Create(ctx, maxKeysBinding("max-keys-warn", admissionregistrationv1.Warn, admissionregistrationv1.Audit), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		huge := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"huge","labels":{"test":"max-keys"}},"data":{"a":"1","b":"2","c":"3"}}`
		want := `299 - "Validation failed for ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-warn': at most 2 keys"`
		eventually(t, 10*time.Second, "the policy warns", func() (bool, error) {
			r := s.do(t, "POST", "/api/v1/namespaces/default/configmaps?dryRun=All", []byte(huge), "Content-Type", "application/json")
			return r.code == http.StatusCreated && r.header.Get("Warning") == want, nil
		})

		// kubectl prints them as kube does.
		rows := tableRows(s.mustKubectl(t, "", "get", "validatingadmissionpolicies,validatingadmissionpolicybindings"))
		hasRow := func(want ...string) bool {
			return slices.ContainsFunc(rows, func(r []string) bool { return len(r) > len(want) && slices.Equal(r[:len(want)], want) })
		}
		if !hasRow("validatingadmissionpolicy.admissionregistration.k8s.io/max-keys", "2", "v1/ConfigMap") ||
			!hasRow("validatingadmissionpolicybinding.admissionregistration.k8s.io/max-keys-warn", "max-keys", "default/limits") {
			t.Errorf("kubectl get: %v", rows)
		}
	})
}
