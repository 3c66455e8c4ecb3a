package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// etcdBinary is etcd built from e2e/kuberef's cmd/etcd (the etcd kube-apiserver is measured on),
// once per run, into the directory TestMain removes: envtest starts etcd whatever its
// kube-apiserver, so a KUBEBUILDER_ASSETS directory holds one.
var etcdBinary = sync.OnceValues(func() (string, error) {
	path := filepath.Join(filepath.Dir(binaryPath), "etcd")
	cmd := exec.Command("go", "build", "-o", path, "./cmd/etcd")
	cmd.Dir = "kuberef"
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building etcd: %v\n%s", err, out)
	}
	return path, nil
})

// envtestAssets is a KUBEBUILDER_ASSETS directory as a kubebuilder project has one, with
// kube-apiserver a link to apiserver, and kubectl when the machine has one.
func envtestAssets(t *testing.T, apiserver string) string {
	t.Helper()
	etcd, err := etcdBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	links := map[string]string{"kube-apiserver": apiserver, "etcd": etcd}
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		links["kubectl"] = kubectl
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// envtestWidgets is the CRD the suite installs through envtest's CRDInstallOptions.
func envtestWidgets() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.envtest.sqlkube.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "envtest.sqlkube.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object",
						Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer", Minimum: ptr.To(1.0)}}}}}}}},
		},
	}
}

// envtestValidatingWebhook is a webhook as kubebuilder scaffolds it, by service reference,
// which envtest rewrites to its local webhook server.
func envtestValidatingWebhook() *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "envtest"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "vconfigmap.kb.io", Rules: configMapRules,
			ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"test": "envtest"}},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: "system", Name: "webhook-service", Path: ptr.To("/validate")}},
			SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}},
	}
}

// TestEnvtest runs controller-runtime's envtest as a kubebuilder project's suite does, on a
// KUBEBUILDER_ASSETS directory whose kube-apiserver is sqlkube: Start (etcd, the API server, a
// CRD, a webhook), a user minted with AddUser, CRUD through a controller-runtime client, the
// webhook called, Stop. With SQLKUBE_KUBE_APISERVER naming a kube-apiserver v1.37.2 binary (as
// for make bench), the same suite runs on it too, in the same sitting: the expectations are
// kube's, and the logged Start and Stop times compare.
func TestEnvtest(t *testing.T) {
	t.Run("sqlkube", func(t *testing.T) { runEnvtest(t, serverBinary(t)) })
	if kube := os.Getenv("SQLKUBE_KUBE_APISERVER"); kube != "" {
		t.Run("kube-apiserver", func(t *testing.T) { runEnvtest(t, kube) })
	}
}

// runEnvtest runs the suite with apiserver as KUBEBUILDER_ASSETS' kube-apiserver.
func runEnvtest(t *testing.T, apiserver string) {
	env := &envtest.Environment{
		BinaryAssetsDirectory: envtestAssets(t, apiserver),
		CRDs:                  []*apiextensionsv1.CustomResourceDefinition{envtestWidgets()},
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{envtestValidatingWebhook()}},
	}
	began := time.Now()
	cfg, err := env.Start()
	startTime := time.Since(began)
	if err != nil {
		env.Stop()
		t.Fatalf("envtest Start: %v", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			env.Stop()
		}
	}()
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkEnvtestUser(t, env, admin)
	checkEnvtestWidgets(t, admin)
	checkEnvtestWebhook(t, env, admin)
	checkEnvtestKubectl(t, env)

	apiServerDir := env.ControlPlane.APIServer.CertDir
	began = time.Now()
	err = env.Stop()
	stopTime := time.Since(began)
	stopped = true
	if err != nil {
		t.Fatalf("envtest Stop: %v", err)
	}
	if _, err := os.Stat(apiServerDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Stop, the API server's directory (its database) is still there: %v", err)
	}
	t.Logf("envtest: Start %s, Stop %s", startTime.Round(time.Millisecond), stopTime.Round(time.Millisecond))
}

// checkEnvtestUser mints a user with no rights through envtest's AddUser (a client certificate
// from the control plane's CA) and checks sqlkube authenticates and authorizes it as kube does.
func checkEnvtestUser(t *testing.T, env *envtest.Environment, admin client.Client) {
	t.Helper()
	user, err := env.AddUser(envtest.User{Name: "alice", Groups: []string{"developers"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	alice, err := client.New(user.Config(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = alice.List(context.Background(), &corev1.SecretList{}, client.InNamespace("default"))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "alice" cannot list resource "secrets"`) {
		t.Fatalf("alice listing secrets: want Forbidden naming alice, got %v", err)
	}
	if err := admin.List(context.Background(), &corev1.SecretList{}, client.InNamespace("default")); err != nil {
		t.Fatalf("envtest's admin listing secrets: %v", err)
	}
}

// checkEnvtestWidgets creates, reads, updates and deletes a Widget of the CRD envtest installed.
func checkEnvtestWidgets(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(schema.GroupVersionKind{Group: "envtest.sqlkube.io", Version: "v1", Kind: "Widget"})
	w.SetNamespace("default")
	w.SetName("w1")
	if err := unstructured.SetNestedField(w.Object, int64(0), "spec", "size"); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, w); !apierrors.IsInvalid(err) {
		t.Fatalf("creating a widget of size 0 against the CRD's minimum of 1: want Invalid, got %v", err)
	}
	_ = unstructured.SetNestedField(w.Object, int64(3), "spec", "size")
	if err := c.Create(ctx, w); err != nil {
		t.Fatalf("creating a widget: %v", err)
	}
	_ = unstructured.SetNestedField(w.Object, int64(4), "spec", "size")
	if err := c.Update(ctx, w); err != nil {
		t.Fatalf("updating the widget: %v", err)
	}
	got := w.DeepCopy()
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 4 {
		t.Fatalf("widget's size after the update: %d, want 4", size)
	}
	if err := c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), got); !apierrors.IsNotFound(err) {
		t.Fatalf("getting the deleted widget: want NotFound, got %v", err)
	}
}

// checkEnvtestWebhook serves the validating webhook envtest installed with controller-runtime's
// webhook server, on the host, port and certificates envtest allocated, and checks the API
// server calls it.
func checkEnvtestWebhook(t *testing.T, env *envtest.Environment, c client.Client) {
	t.Helper()
	opts := env.WebhookInstallOptions
	srv := webhook.NewServer(webhook.Options{Host: opts.LocalServingHost, Port: opts.LocalServingPort, CertDir: opts.LocalServingCertDir})
	srv.Register("/validate", admission.WithValidator[*corev1.ConfigMap](clientgoscheme.Scheme, configMapValidator{}))
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("webhook server: %v", err)
		}
	}()
	// The server's own readiness check: a TLS handshake with it.
	eventually(t, 10*time.Second, "the webhook server serving", func() (bool, error) {
		err := srv.StartedChecker()(nil)
		return err == nil, err
	})
	bad := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bad", Labels: map[string]string{"test": "envtest"}},
		Data: map[string]string{"bad": "yes"}}
	err := c.Create(context.Background(), bad)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "bad is not allowed") {
		t.Fatalf("creating a ConfigMap the webhook denies: want Forbidden with the webhook's reason, got %v", err)
	}
}

// checkEnvtestKubectl runs kubectl as envtest's default user, with the kubeconfig envtest wrote,
// when the assets hold a kubectl.
func checkEnvtestKubectl(t *testing.T, env *envtest.Environment) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(env.BinaryAssetsDirectory, "kubectl")); err != nil {
		t.Log("no kubectl on PATH: envtest's KubeCtl not tried")
		return
	}
	stdout, stderr, err := env.ControlPlane.KubeCtl().Run("get", "namespace", "default", "-o", "name")
	if err != nil {
		errOut, _ := io.ReadAll(stderr)
		t.Fatalf("kubectl get namespace default: %v\n%s", err, errOut)
	}
	if out, _ := io.ReadAll(stdout); strings.TrimSpace(string(out)) != "namespace/default" {
		t.Fatalf("kubectl get namespace default -o name: %q", out)
	}
}
