package builtin

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/sqlkube/sqlkube/server/resource"
)

// TestPodGracefulDelete: kube's pod strategy decides a pod's grace period: a bound pod waits
// its terminationGracePeriodSeconds (or the one asked for), an unbound or terminal one none; a
// deployment is never deleted gracefully.
func TestPodGracefulDelete(t *testing.T) {
	pods := builtinResource(t, "pods").Strategy.(resource.GracefulDeleteStrategy)
	for _, c := range []struct {
		name, body string
		requested  *int64
		want       int64
	}{
		{"bound", `{spec: {nodeName: node-1, containers: [{name: c, image: i}]}}`, nil, 30},
		{"bound, shorter period asked", `{spec: {nodeName: node-1, containers: [{name: c, image: i}]}}`, ptr.To[int64](5), 5},
		{"unbound", `{spec: {containers: [{name: c, image: i}]}}`, nil, 0},
		{"terminal", `{spec: {nodeName: node-1, containers: [{name: c, image: i}]}, status: {phase: Succeeded}}`, nil, 0},
	} {
		pod := decodedForValidation(t, builtinResource(t, "pods"), `{metadata: {name: p}, `+c.body[1:])
		opts := &metav1.DeleteOptions{GracePeriodSeconds: c.requested}
		graceful, pending, err := pods.BeforeDelete(t.Context(), pod, opts)
		if err != nil || !graceful || pending || pod.GetDeletionTimestamp() == nil || *pod.GetDeletionGracePeriodSeconds() != c.want {
			t.Errorf("%s: graceful %t, pending %t, %v; deletion %v, grace %v; want grace %d", c.name, graceful, pending, err,
				pod.GetDeletionTimestamp(), pod.GetDeletionGracePeriodSeconds(), c.want)
		}
	}

	deployment := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "d"}}}
	graceful, pending, err := builtinResource(t, "deployments.apps").Strategy.(resource.GracefulDeleteStrategy).BeforeDelete(t.Context(), deployment, &metav1.DeleteOptions{})
	if graceful || pending || err != nil || deployment.GetDeletionTimestamp() != nil {
		t.Errorf("deployment: graceful %t, pending %t, %v", graceful, pending, err)
	}
}
