package e2e

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var (
	configMaps = schema.GroupResource{Resource: "configmaps"}
	namespaces = schema.GroupResource{Resource: "namespaces"}
)

func TestNamespaces(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		cs := s.clientset()
		before := time.Now().Truncate(time.Second)
		ns := createNamespace(t, cs, "e2e-ns")
		checkNewObjectMeta(t, ns, before)
		// kube-apiserver labels every namespace with its name, adds the kubernetes finalizer and
		// marks it Active.
		if got := ns.Labels["kubernetes.io/metadata.name"]; got != "e2e-ns" {
			t.Errorf("label kubernetes.io/metadata.name = %q, want e2e-ns", got)
		}
		if !cmp.Equal(ns.Spec.Finalizers, []corev1.FinalizerName{corev1.FinalizerKubernetes}) || ns.Status.Phase != corev1.NamespaceActive {
			t.Errorf("spec.finalizers %v, status.phase %q; want [kubernetes], Active", ns.Spec.Finalizers, ns.Status.Phase)
		}

		ns.Labels["team"] = "e2e"
		updated, err := cs.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
		if err != nil || updated.Labels["team"] != "e2e" || updated.ResourceVersion == ns.ResourceVersion {
			t.Fatalf("update: %v, labels %v, resourceVersion %s -> %s", err, updated.Labels, ns.ResourceVersion, updated.ResourceVersion)
		}

		list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"default", "e2e-ns", "kube-node-lease", "kube-public", "kube-system"}
		if got := names(t, list); !cmp.Equal(got, want) {
			t.Errorf("namespaces = %v, want %v", got, want)
		}

		// The initial namespaces carry their kind from the start: kubectl refuses an object
		// without one ("Object 'Kind' is missing").
		if out := s.mustKubectl(t, "", "get", "ns", "default", "-o", "yaml"); !strings.Contains(out, "kind: Namespace") {
			t.Errorf("kubectl get ns default -o yaml:\n%s", out)
		}
		s.mustKubectl(t, "", "label", "ns", "kube-public", "e2e=labelled")

		_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "Bad.Name"}}, metav1.CreateOptions{})
		assertAPIError(t, err, invalidName(schema.GroupKind{Kind: "Namespace"}, "Bad.Name", validation.ValidateNamespaceName))
		_, err = cs.CoreV1().Namespaces().Get(ctx, "nope", metav1.GetOptions{})
		assertAPIError(t, err, apierrors.NewNotFound(namespaces, "nope"))

		checkNamespaceDelete(t, s)
	})
}

// checkNamespaceDelete deletes a namespace. kube-apiserver marks it Terminating until the
// namespace controller has emptied it; while it is terminating, nothing new may be created in it.
// A configmap with a finalizer holds the namespace in that state (an empty one may be gone at
// once); removing the finalizer lets the namespace go.
func checkNamespaceDelete(t *testing.T, s *sqlkubeServer) {
	cs := s.clientset()
	held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"e2e.sqlkube.io/hold"}}}
	if _, err := cs.CoreV1().ConfigMaps("e2e-ns").Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, "e2e-ns", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete namespace: %v", err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "e2e-ns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.DeletionTimestamp == nil || ns.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("after delete: deletionTimestamp %v, phase %q; want it set and Terminating", ns.DeletionTimestamp, ns.Status.Phase)
	}
	_, err = cs.CoreV1().ConfigMaps("e2e-ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
	terminating := apierrors.NewForbidden(configMaps, "late", errors.New("unable to create new content in namespace e2e-ns because it is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "namespace e2e-ns is being terminated", Field: "metadata.namespace"}}
	assertAPIError(t, err, terminating)

	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := cs.CoreV1().ConfigMaps("e2e-ns").Patch(ctx, "held", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "namespace e2e-ns gone", func() (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "e2e-ns", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

func TestConfigMapRules(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		cs := s.clientset()
		createNamespace(t, cs, "e2e-cm")
		cms := cs.CoreV1().ConfigMaps("e2e-cm")

		_, err := cs.CoreV1().ConfigMaps("nope").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
		assertAPIError(t, err, apierrors.NewNotFound(namespaces, "nope"))
		// A read in a missing namespace is about the object, not the namespace.
		_, err = cs.CoreV1().ConfigMaps("nope").Get(ctx, "x", metav1.GetOptions{})
		assertAPIError(t, err, apierrors.NewNotFound(configMaps, "x"))
		list, err := cs.CoreV1().ConfigMaps("nope").List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 0 {
			t.Errorf("list in a missing namespace: %v, %d items; want an empty list", err, len(list.Items))
		}

		created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Data: map[string]string{"a": "b"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// ConfigMaps allow an unconditional update: no resourceVersion means "whatever is there".
		created.ResourceVersion = ""
		created.Data["a"] = "c"
		updated, err := cms.Update(ctx, created, metav1.UpdateOptions{})
		if err != nil || updated.Data["a"] != "c" || updated.ResourceVersion == "" {
			t.Fatalf("unconditional update: %v, %+v", err, updated)
		}

		// An update of a missing configmap does not create it.
		_, err = cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "missing"}}, metav1.UpdateOptions{})
		assertAPIError(t, err, apierrors.NewNotFound(configMaps, "missing"))
		_, err = cms.Get(ctx, "missing", metav1.GetOptions{})
		assertAPIError(t, err, apierrors.NewNotFound(configMaps, "missing"))
	})
}

func TestSecretStringData(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		cs := s.clientset()
		createNamespace(t, cs, "e2e-secret")
		// kube-apiserver merges stringData into data (stringData wins), drops it, and defaults the
		// type to Opaque.
		created, err := cs.CoreV1().Secrets("e2e-secret").Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "s"},
			Data:       map[string][]byte{"a": []byte("from-data"), "b": []byte("kept")},
			StringData: map[string]string{"a": "from-stringData"},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][]byte{"a": []byte("from-stringData"), "b": []byte("kept")}
		if !cmp.Equal(created.Data, want) || created.StringData != nil || created.Type != corev1.SecretTypeOpaque {
			t.Errorf("secret data %q, stringData %v, type %q; want %q, none, Opaque", created.Data, created.StringData, created.Type, want)
		}
	})
}
