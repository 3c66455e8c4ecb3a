// Package consumer is a Go module of its own that uses sqlkube as a library, as another
// project would: README's "Testing Go programs against sqlkube" in a module that requires
// github.com/sqlkube/sqlkube. e2e's TestConsumerModule runs its test and checks that its go.mod
// carries sqlkube's replace block.
package consumer

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sqlkube/sqlkube/server/testserver"
)

// TestWithSqlkube starts a server in the test and writes an object to it with client-go.
func TestWithSqlkube(t *testing.T) {
	srv := testserver.Start(t)
	client, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"color": "blue"}}
	if _, err := client.CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().ConfigMaps("default").Get(context.Background(), "settings", metav1.GetOptions{})
	if err != nil || got.Data["color"] != "blue" {
		t.Fatalf("read back %v, %v", got, err)
	}
}
