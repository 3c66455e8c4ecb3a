package e2e

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const replicationController = `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"rc","namespace":"default"},
"spec":{"selector":{"app":"rc"},"template":{"metadata":{"labels":{"app":"rc"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`

// TestPodsWithKubectl: kubectl runs, lists (with kube's columns and field selectors) and deletes
// pods, a pod is evicted through the API, and a ReplicationController is scaled; nothing runs
// them, as in envtest.
func TestPodsWithKubectl(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		expectOutput(t, s.mustKubectl(t, "", "run", "web", "--image=nginx:1.27", "--labels=app=web"), "pod/web created")
		rows := tableRows(s.mustKubectl(t, "", "get", "pods"))
		if len(rows) != 2 || !cmp.Equal(rows[0], []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}) || !cmp.Equal(rows[1][:4], []string{"web", "0/1", "Pending", "0"}) {
			t.Errorf("kubectl get pods: %q", rows)
		}
		expectOutput(t, s.mustKubectl(t, "", "get", "pods", "--field-selector", "status.phase=Pending,spec.nodeName=", "-o", "name"), "pod/web")
		expectOutput(t, s.mustKubectl(t, "", "get", "pods", "--field-selector", "spec.nodeName=node-1", "-o", "name"), "")
		_, err := s.kubectl(t, "", "get", "pods", "--field-selector", "spec.image=nginx")
		expectKubectlError(t, err, `Error from server (BadRequest): Unable to find "/v1, Resource=pods" that match label selector "", field selector "spec.image=nginx": field label not supported: spec.image`)
		// The default namespace holds the kubernetes Service too, as on kube.
		expectOutput(t, s.mustKubectl(t, "", "get", "all", "-o", "name"), "pod/web\nservice/kubernetes")

		cs := s.clientset()
		expectOutput(t, s.mustKubectl(t, "", "run", "evicted", "--image=nginx"), "pod/evicted created")
		eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "evicted", Namespace: "default"}}
		if err := cs.CoreV1().Pods("default").EvictV1(ctx, eviction); err != nil {
			t.Fatalf("evicting a pending pod: %v", err)
		}
		if _, err := cs.CoreV1().Pods("default").Get(ctx, "evicted", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("evicted pod: %v", err)
		}

		_, err = s.kubectl(t, "", "logs", "web")
		if err != nil {
			t.Errorf("kubectl logs of a pod no node runs: %v", err)
		}
		_, err = s.kubectl(t, "", "exec", "web", "--", "ls")
		if err == nil {
			t.Errorf("kubectl exec succeeded without a kubelet")
		}
		expectOutput(t, s.mustKubectl(t, "", "delete", "pod", "web"), `pod "web" deleted`)

		expectOutput(t, s.mustKubectl(t, replicationController, "create", "-f", "-"), "replicationcontroller/rc created")
		expectOutput(t, s.mustKubectl(t, "", "scale", "rc", "rc", "--replicas=3"), "replicationcontroller/rc scaled")
		scale, err := cs.CoreV1().ReplicationControllers("default").GetScale(ctx, "rc", metav1.GetOptions{})
		if err != nil || scale.Spec.Replicas != 3 || scale.Status.Selector != "app=rc" {
			t.Errorf("rc's scale: %v %+v", err, scale)
		}
		rows = tableRows(s.mustKubectl(t, "", "get", "rc"))
		if len(rows) != 2 || !cmp.Equal(rows[0], []string{"NAME", "DESIRED", "CURRENT", "READY", "AGE"}) || !cmp.Equal(rows[1][:4], []string{"rc", "3", "0", "0"}) {
			t.Errorf("kubectl get rc: %q", rows)
		}
	})
}
