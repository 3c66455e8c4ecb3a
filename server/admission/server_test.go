package admission_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sqlkube/sqlkube/server/testserver"
)

// The plugins kube turns on by flag work in the whole server, on its loopback client:
// NamespaceAutoProvision creates the namespace of a create (before the namespace check, as in
// kube), NodeRestriction keeps a node to its own Node object.
func TestPluginsEnabledByFlag(t *testing.T) {
	srv := testserver.Start(t, testserver.WithFlags("--enable-admission-plugins=NamespaceAutoProvision,NodeRestriction", "--authorization-mode=Node,RBAC"))
	admin := clientFor(t, srv.Config)
	ctx := t.Context()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	if _, err := admin.CoreV1().ConfigMaps("provisioned").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a ConfigMap in a namespace NamespaceAutoProvision creates: %v", err)
	}
	if _, err := admin.CoreV1().Namespaces().Get(ctx, "provisioned", metav1.GetOptions{}); err != nil {
		t.Errorf("the namespace provisioned: %v", err)
	}

	// kube's Node authorizer lets the nodes write Nodes; NodeRestriction keeps each to its own.
	config, err := srv.ConfigFor("system:node:n1", "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	node := clientFor(t, config)
	_, err = node.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}, metav1.CreateOptions{})
	if want := `nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"`; !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("node n1 creating node n2: %v, want %s", err, want)
	}
	if _, err := node.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("node n1 creating itself: %v", err)
	}
}

func clientFor(t *testing.T, config *rest.Config) kubernetes.Interface {
	t.Helper()
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return client
}
