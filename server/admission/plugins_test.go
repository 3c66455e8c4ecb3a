package admission

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/warning"

	"github.com/sqlkube/sqlkube/server/pods"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// mastersOnly allows members of system:masters anything, others nothing.
var mastersOnly = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if slices.Contains(a.GetUser().GetGroups(), user.SystemPrivilegedGroup) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
})

// get reads the object group/version/resource namespace/name as stored.
func (h *harness) get(group, version, resource, namespace, name string) *unstructured.Unstructured {
	h.t.Helper()
	res := h.resource(group, version, resource)
	stored, err := h.registry.Get(asAdmin(h.t.Context()), registry.Ref{Resource: res, Namespace: namespace, Name: name}, &metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return decodeStored(h.t, res, stored)
}

// withServiceAccount stores namespace's default ServiceAccount, which the ServiceAccount plugin
// gives pods, and is h.
func (h *harness) withServiceAccount(namespace string) *harness {
	h.store(`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default","namespace":"` + namespace + `"}}`)
	return h
}

// pod is a pod named name with one container requesting cpu, and spec's fields.
func pod(name, cpu, spec string) string {
	if spec != "" {
		spec += ","
	}
	return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{` + spec +
		`"containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"` + cpu + `"},"limits":{"cpu":"` + cpu + `"}}}]}}`
}

// Issue 46, 1: ClusterTrustBundleAttest refuses a bundle of a signer its writer may not attest
// for, as kube does; a bundle without a signer needs no attest.
func TestClusterTrustBundleAttest(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		h := newHarness(t, harnessConfig{dsn: dsn, authz: mastersOnly})
		bundles := h.resource("certificates.k8s.io", "v1", "clustertrustbundles")
		bundle := func(name, signer string) string {
			signerField := ""
			if signer != "" {
				signerField = `"signerName":"` + signer + `",`
			}
			trustBundle, _ := json.Marshal(selfSignedPEM(t))
			return `{"apiVersion":"certificates.k8s.io/v1","kind":"ClusterTrustBundle","metadata":{"name":"` + name + `"},"spec":{` +
				signerField + `"trustBundle":` + string(trustBundle) + `}}`
		}
		signed := bundle("kubernetes.io:kube-apiserver-serving:alice", "kubernetes.io/kube-apiserver-serving")
		_, err := h.createAs(asAlice(t.Context()), bundles, signed, false)
		want := `clustertrustbundles.certificates.k8s.io "kubernetes.io:kube-apiserver-serving:alice" is forbidden: ` +
			`user not permitted to attest for signerName "kubernetes.io/kube-apiserver-serving"`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Errorf("alice's bundle: %v, want %s", err, want)
		}
		if _, err := h.createAs(asAdmin(t.Context()), bundles, signed, false); err != nil {
			t.Errorf("an admin's bundle: %v", err)
		}
		if _, err := h.createAs(asAlice(t.Context()), bundles, bundle("unsigned", ""), false); err != nil {
			t.Errorf("alice's bundle with no signer: %v", err)
		}
	})
}

// selfSignedPEM is a CA certificate, PEM-encoded.
func selfSignedPEM(t *testing.T) string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: time.Now(),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// Issue 46, 2: RuntimeClass refuses a pod naming a RuntimeClass that does not exist, and one with
// an overhead but no RuntimeClass; it gives a pod its RuntimeClass's overhead, node selector and
// tolerations, which ResourceQuota then counts.
func TestRuntimeClass(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		h := newHarness(t, harnessConfig{dsn: dsn}).withServiceAccount("default")
		podsRes := h.resource("", "v1", "pods")
		ctx := asAdmin(t.Context())
		_, err := h.createAs(ctx, podsRes, pod("unknown", "100m", `"runtimeClassName":"missing"`), false)
		if want := `pods "unknown" is forbidden: pod rejected: RuntimeClass "missing" not found`; !apierrors.IsForbidden(err) || err.Error() != want {
			t.Errorf("a pod of a missing RuntimeClass: %v, want %s", err, want)
		}
		_, err = h.createAs(ctx, podsRes, pod("overhead", "100m", `"overhead":{"cpu":"1"}`), false)
		if want := `pods "overhead" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead`; !apierrors.IsForbidden(err) || err.Error() != want {
			t.Errorf("a pod with an overhead and no RuntimeClass: %v, want %s", err, want)
		}

		h.store(`{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"sandboxed"},"handler":"runsc",
			"overhead":{"podFixed":{"cpu":"2"}},"scheduling":{"nodeSelector":{"sandbox":"true"},"tolerations":[{"key":"sandbox","operator":"Exists","effect":"NoSchedule"}]}}`)
		created := h.store(pod("sandboxed", "100m", `"runtimeClassName":"sandboxed"`))
		var spec corev1.PodSpec
		if err := fromUnstructured(created.Object["spec"], &spec); err != nil {
			t.Fatal(err)
		}
		if spec.Overhead.Cpu().String() != "2" || spec.NodeSelector["sandbox"] != "true" || !slices.ContainsFunc(spec.Tolerations, func(t corev1.Toleration) bool { return t.Key == "sandbox" }) {
			t.Errorf("the pod of a RuntimeClass: overhead %v, node selector %v, tolerations %v", spec.Overhead, spec.NodeSelector, spec.Tolerations)
		}

		h.limitNamespace("requests.cpu", "1")
		_, err = h.createAs(ctx, podsRes, pod("over", "500m", `"runtimeClassName":"sandboxed"`), false)
		want := `pods "over" is forbidden: exceeded quota: limit, requested: requests.cpu=2500m, used: requests.cpu=0, limited: requests.cpu=1`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Errorf("a pod whose overhead exceeds the quota: %v, want %s", err, want)
		}
	})
}

// limitNamespace stores a ResourceQuota "limit" of hard in namespace default, with its status
// written as kube's quota controller would, and waits until the chain follows it.
func (h *harness) limitNamespace(resourceName, hard string) {
	h.t.Helper()
	quota := h.store(`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"limit"},"spec":{"hard":{"` + resourceName + `":"` + hard + `"}}}`)
	_ = unstructured.SetNestedStringMap(quota.Object, map[string]string{resourceName: hard}, "status", "hard")
	_ = unstructured.SetNestedStringMap(quota.Object, map[string]string{resourceName: "0"}, "status", "used")
	ref := registry.Ref{Resource: h.resource("", "v1", "resourcequotas"), Namespace: "default", Name: "limit", Subresource: "status"}
	if _, _, err := h.registry.Update(asAdmin(h.t.Context()), ref, quota, &metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	eventually(h.t, "the quota is followed", func() bool { return h.chain.quotas.mayHold("default") })
}

func fromUnstructured(content any, into any) error {
	data, err := json.Marshal(content)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, into)
}

// Issue 46, 3: PodResizeValidator refuses a resize beyond the allocatable resources of the
// pod's node, read through the registry.
func TestPodResizeValidator(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		h := newHarness(t, harnessConfig{dsn: dsn}).withServiceAccount("default")
		h.store(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"small"},"status":{"allocatable":{"cpu":"1","memory":"1Gi"}}}`)
		h.store(pod("growing", "500m", `"nodeName":"small"`))
		resize := func(cpu string) error {
			p := h.get("", "v1", "pods", "default", "growing")
			containers, _, _ := unstructured.NestedSlice(p.Object, "spec", "containers")
			resources := map[string]any{"requests": map[string]any{"cpu": cpu}, "limits": map[string]any{"cpu": cpu}}
			containers[0].(map[string]any)["resources"] = resources
			_ = unstructured.SetNestedSlice(p.Object, containers, "spec", "containers")
			ref := registry.Ref{Resource: h.resource("", "v1", "pods"), Namespace: "default", Name: "growing", Subresource: "resize"}
			_, _, err := h.registry.Update(asAdmin(t.Context()), ref, p, &metav1.UpdateOptions{})
			return err
		}
		err := resize("2")
		want := `pods "growing" is forbidden: node didn't have enough allocatable resources: cpu, requested: 2000, allocatable: 1000`
		var status *apierrors.StatusError
		if !errors.As(err, &status) || !apierrors.IsForbidden(err) || err.Error() != want {
			t.Fatalf("a resize beyond the node: %v, want %s", err, want)
		}
		if causes := status.ErrStatus.Details.Causes; len(causes) != 1 || causes[0].Type != "NodeCapacity" {
			t.Errorf("the refusal's causes: %+v", causes)
		}
		if err := resize("800m"); err != nil {
			t.Errorf("a resize within the node: %v", err)
		}
	})
}

// Issue 46, 4: PodTopologyLabels gives a binding the zone and region labels of its node, which
// the pod gets, over those the binding asked for.
func TestPodTopologyLabels(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		h := newHarness(t, harnessConfig{dsn: dsn}).withServiceAccount("default")
		h.store(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","labels":{"topology.kubernetes.io/zone":"z1","topology.kubernetes.io/region":"r1","other":"x"}}}`)
		h.store(pod("bound", "100m", ""))
		binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "bound", Namespace: "default",
			Labels: map[string]string{"topology.kubernetes.io/zone": "forged", "asked": "yes"}}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
		subresources, err := pods.New(h.catalog, h.registry)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := subresources.Bind(asAdmin(t.Context()), "default", "bound", binding, false); err != nil {
			t.Fatal(err)
		}
		labels := h.get("", "v1", "pods", "default", "bound").GetLabels()
		want := map[string]string{"topology.kubernetes.io/zone": "z1", "topology.kubernetes.io/region": "r1", "asked": "yes"}
		if len(labels) != len(want) || labels["topology.kubernetes.io/zone"] != "z1" || labels["topology.kubernetes.io/region"] != "r1" || labels["asked"] != "yes" {
			t.Errorf("the bound pod's labels %v, want %v", labels, want)
		}
	})
}

// warnings records the warnings of a request.
type warnings []string

func (w *warnings) AddWarning(_, text string) { *w = append(*w, text) }

// Issue 46, 5: PodSecurity refuses invalid pod security labels on a namespace, with kube's 422,
// and warns of the pods a tightened namespace holds that violate its new level.
func TestPodSecurityNamespaceLabels(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		h := newHarness(t, harnessConfig{dsn: dsn})
		namespaces := h.resource("", "v1", "namespaces")
		ctx := asAdmin(t.Context())
		_, err := h.createAs(ctx, namespaces, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"strict","labels":{"pod-security.kubernetes.io/enforce":"superstrict"}}}`, false)
		// kube's message names the kind, as kube-apiserver's PodSecurity plugin answers it.
		want := `Namespace "strict" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "superstrict": must be one of privileged, baseline, restricted`
		if !apierrors.IsInvalid(err) || err.Error() != want {
			t.Errorf("an invalid level: %v, want %s", err, want)
		}
		_, err = h.createAs(ctx, namespaces, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"future","labels":{"pod-security.kubernetes.io/enforce-version":"v9.x"}}}`, false)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: "v9.x"`) {
			t.Errorf("an invalid version: %v", err)
		}

		h.store(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"loose"}}`)
		h.withServiceAccount("loose")
		h.store(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"hostnet","namespace":"loose"},"spec":{"hostNetwork":true,"containers":[{"name":"c","image":"busybox"}]}}`)
		ns := h.get("", "v1", "namespaces", "", "loose")
		ns.SetLabels(map[string]string{"pod-security.kubernetes.io/enforce": "baseline"})
		var got warnings
		if _, _, err := h.registry.Update(warning.WithWarningRecorder(ctx, &got), registry.Ref{Resource: namespaces, Name: "loose"}, ns, &metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		wantWarnings := []string{`existing pods in namespace "loose" violate the new PodSecurity enforce level "baseline:latest"`, `hostnet: host namespaces`}
		if !slices.Equal(got, wantWarnings) {
			t.Errorf("warnings %q, want %q", got, wantWarnings)
		}
	})
}

// podNodeSelectorConfig is an AdmissionConfiguration file configuring PodNodeSelector.
const podNodeSelectorConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodNodeSelector
  configuration:
    podNodeSelectorPluginConfig:
      clusterDefaultNodeSelector: env=prod
`

// The flags enable kube's plugins that are off by default, with their configuration from the
// --admission-control-config-file, and disable those on by default.
func TestAdmissionFlags(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		config := filepath.Join(t.TempDir(), "admission.yaml")
		if err := os.WriteFile(config, []byte(podNodeSelectorConfig), 0o600); err != nil {
			t.Fatal(err)
		}
		h := newHarness(t, harnessConfig{dsn: dsn, flags: []string{"--enable-admission-plugins=AlwaysPullImages,PodNodeSelector",
			"--disable-admission-plugins=NamespaceLifecycle,RuntimeClass", "--admission-control-config-file=" + config}}).withServiceAccount("default")
		created := h.store(pod("pulled", "100m", `"runtimeClassName":"missing"`))
		containers, _, _ := unstructured.NestedSlice(created.Object, "spec", "containers")
		policy := containers[0].(map[string]any)["imagePullPolicy"]
		selector, _, _ := unstructured.NestedStringMap(created.Object, "spec", "nodeSelector")
		if policy != "Always" || selector["env"] != "prod" {
			t.Errorf("with AlwaysPullImages and PodNodeSelector: imagePullPolicy %q, nodeSelector %v", policy, selector)
		}
		configMaps := h.resource("", "v1", "configmaps")
		if _, err := h.createAs(asAdmin(t.Context()), configMaps, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"nowhere"}}`, false); err != nil {
			t.Errorf("without NamespaceLifecycle, content in a namespace that does not exist: %v", err)
		}
	})
}

// Options kube refuses, and a configuration file kube cannot read, stop the chain from
// starting, with kube's errors.
func TestAdmissionOptionsRefused(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	start := func(configure func(*Options)) error {
		opts := Options{Plugins: NewPluginOptions()}
		configure(&opts)
		return New(opts, h.catalog, nil, h.chain.log).start(t.Context(), h.client, nil, mastersOnly)
	}
	err := start(func(o *Options) { o.Plugins.GenericAdmission.EnablePlugins = []string{"PodNodeSelector", "Foo"} })
	if want := `enable-admission-plugins plugin "Foo" is unknown`; err == nil || err.Error() != want {
		t.Errorf("start with an unknown plugin: %v, want %s", err, want)
	}
	err = start(func(o *Options) { o.Plugins.GenericAdmission.ConfigFile = filepath.Join(t.TempDir(), "missing.yaml") })
	if err == nil || !strings.HasPrefix(err.Error(), "failed to read plugin config: ") {
		t.Errorf("start with a missing configuration file: %v", err)
	}
}
