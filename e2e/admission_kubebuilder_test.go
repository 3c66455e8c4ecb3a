package e2e

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// configMapDefaulter and configMapValidator are webhooks as kubebuilder scaffolds them for a type
// (here ConfigMaps labelled test=kubebuilder), served by controller-runtime's handlers unchanged.
type configMapDefaulter struct{}

func (configMapDefaulter) Default(_ context.Context, cm *corev1.ConfigMap) error {
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data["defaulted"] = "yes"
	return nil
}

type configMapValidator struct{}

func (configMapValidator) ValidateCreate(_ context.Context, cm *corev1.ConfigMap) (admission.Warnings, error) {
	if _, bad := cm.Data["bad"]; bad {
		return nil, errors.New("bad is not allowed")
	}
	return admission.Warnings{"checked by kubebuilder"}, nil
}

func (v configMapValidator) ValidateUpdate(ctx context.Context, _, cm *corev1.ConfigMap) (admission.Warnings, error) {
	return v.ValidateCreate(ctx, cm)
}

func (configMapValidator) ValidateDelete(context.Context, *corev1.ConfigMap) (admission.Warnings, error) {
	return nil, nil
}

func TestKubebuilderWebhooks(t *testing.T) {
	ca := newTestCA(t)
	mux := http.NewServeMux()
	mux.Handle("/mutate", admission.WithDefaulter[*corev1.ConfigMap](clientgoscheme.Scheme, configMapDefaulter{}))
	mux.Handle("/validate", admission.WithValidator[*corev1.ConfigMap](clientgoscheme.Scheme, configMapValidator{}))
	srv := ca.serve(t, mux)
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"test": "kubebuilder"}}
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		ctx, client := context.Background(), s.clientset()
		hooks := client.AdmissionregistrationV1()
		_, err := hooks.MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "kubebuilder"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mconfigmap.kb.io", Rules: configMapRules, ObjectSelector: selector,
				ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/mutate"), CABundle: ca.bundle},
				SideEffects:  ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = hooks.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "kubebuilder"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "vconfigmap.kb.io", Rules: configMapRules, ObjectSelector: selector,
				ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/validate"), CABundle: ca.bundle},
				SideEffects:  ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = createUntil(t, client, labelledConfigMap("bad", "kubebuilder", map[string]string{"bad": "x"}), "the validating webhook denies",
			func(_ *corev1.ConfigMap, err error) bool { return err != nil })
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `admission webhook "vconfigmap.kb.io" denied the request: bad is not allowed`) {
			t.Errorf("create of a bad ConfigMap: %v", err)
		}
		good, _ := createUntil(t, client, labelledConfigMap("good", "kubebuilder", nil), "the mutating webhook defaults",
			func(cm *corev1.ConfigMap, err error) bool { return err == nil && cm.Data["defaulted"] == "yes" })
		if good.Data["defaulted"] != "yes" {
			t.Errorf("defaulted ConfigMap %v", good.Data)
		}
		r := s.do(t, "POST", "/api/v1/namespaces/default/configmaps", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"warned","labels":{"test":"kubebuilder"}}}`), "Content-Type", "application/json")
		if r.code != http.StatusCreated || r.header.Get("Warning") != `299 - "checked by kubebuilder"` {
			t.Errorf("create answered %d with Warning %q: %s", r.code, r.header.Get("Warning"), r.body)
		}
	})
}
