package endpoints_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sqlkube/sqlkube/server/controllers/controllertest"
)

// clients are client-go clients of a test server.
type clients struct {
	core    kubernetes.Interface
	dynamic dynamic.Interface
}

func newClients(t *testing.T, api *testAPI) clients {
	t.Helper()
	config := &rest.Config{Host: api.http.URL}
	return clients{core: kubernetes.NewForConfigOrDie(config), dynamic: dynamic.NewForConfigOrDie(config)}
}

func createConfigMap(t *testing.T, c clients, namespace string, meta metav1.ObjectMeta) *corev1.ConfigMap {
	t.Helper()
	meta.Namespace = namespace
	cm, err := c.core.CoreV1().ConfigMaps(namespace).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: meta}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating configmap %s/%s: %v", namespace, meta.Name, err)
	}
	return cm
}

// ownedBy is a reference to the config map owner.
func ownedBy(owner *corev1.ConfigMap, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: &block}
}

// waitGone waits until get answers NotFound.
func waitGone(t *testing.T, what string, get func() error) {
	t.Helper()
	controllertest.Eventually(t, what+" is gone", func() bool { return apierrors.IsNotFound(get()) })
}
