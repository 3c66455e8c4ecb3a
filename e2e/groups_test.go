package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"
)

// TestBatchAutoscalingCertificatesSchedulingWithKubectl: kubectl creates Jobs, CronJobs and
// HorizontalPodAutoscalers (read back in autoscaling v2 and v1), approves a
// CertificateSigningRequest (which needs the approve verb on its signer, as kube's
// CertificateApproval plugin checks) and lists the system PriorityClasses the server writes at
// start, which it refuses to delete.
func TestBatchAutoscalingCertificatesSchedulingWithKubectl(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		expectOutput(t, s.mustKubectl(t, "", "create", "deployment", "web", "--image=nginx"), "deployment.apps/web created")
		expectOutput(t, s.mustKubectl(t, "", "create", "job", "once", "--image=busybox", "--", "echo", "hi"), "job.batch/once created")
		expectOutput(t, s.mustKubectl(t, "", "create", "cronjob", "nightly", "--image=busybox", "--schedule=0 3 * * *", "--", "echo", "hi"),
			"cronjob.batch/nightly created")
		expectOutput(t, s.mustKubectl(t, "", "autoscale", "deployment", "web", "--min=2", "--max=5", "--cpu-percent=80"),
			"horizontalpodautoscaler.autoscaling/web autoscaled")
		expectOutput(t, s.mustKubectl(t, "", "get", "all", "-o", "name"), strings.Join([]string{
			"service/kubernetes", "deployment.apps/web", "horizontalpodautoscaler.autoscaling/web", "cronjob.batch/nightly", "job.batch/once"}, "\n"))

		var v2, v1 map[string]any
		mustYAML(t, s.mustKubectl(t, "", "get", "horizontalpodautoscalers.v2.autoscaling", "web", "-o", "yaml"), &v2)
		mustYAML(t, s.mustKubectl(t, "", "get", "horizontalpodautoscalers.v1.autoscaling", "web", "-o", "yaml"), &v1)
		wantMetrics := []any{map[string]any{"type": "Resource", "resource": map[string]any{
			"name": "cpu", "target": map[string]any{"type": "Utilization", "averageUtilization": float64(80)}}}}
		if v2["apiVersion"] != "autoscaling/v2" || !cmp.Equal(v2["spec"].(map[string]any)["metrics"], wantMetrics) {
			t.Errorf("get hpa in v2:\n%v", v2)
		}
		if spec := v1["spec"].(map[string]any); v1["apiVersion"] != "autoscaling/v1" || spec["targetCPUUtilizationPercentage"] != float64(80) || spec["minReplicas"] != float64(2) {
			t.Errorf("get hpa in v1:\n%v", v1)
		}

		checkCertificateApproval(t, s)

		var out string
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			out = s.mustKubectl(t, "", "get", "priorityclasses", "-o", "name")
			return strings.Count(out, "\n") == 2, nil
		})
		if err != nil || strings.TrimSpace(out) != "priorityclass.scheduling.k8s.io/system-cluster-critical\npriorityclass.scheduling.k8s.io/system-node-critical" {
			t.Errorf("system priority classes: %v\n%s", err, out)
		}
		_, err = s.kubectl(t, "", "delete", "priorityclass", "system-node-critical")
		expectKubectlError(t, err, `Error from server (Forbidden): priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority class and cannot be deleted`)
	})
}

// checkCertificateApproval creates a CertificateSigningRequest, has a user who may write
// /approval but not approve for its signer try to approve it (kube's CertificateApproval plugin
// refuses), then approves it as the admin.
func checkCertificateApproval(t *testing.T, s *sqlkubeServer) {
	t.Helper()
	csr := `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"alice"},
		"spec":{"request":"` + base64.StdEncoding.EncodeToString(certificateRequest(t, "alice")) + `",
		"signerName":"kubernetes.io/kube-apiserver-client","usages":["client auth"]}}`
	expectOutput(t, s.mustKubectl(t, csr, "create", "-f", "-"), "certificatesigningrequest.certificates.k8s.io/alice created")
	s.mustKubectl(t, "", "create", "clusterrole", "csr-approver", "--verb=get,list,update", "--resource=certificatesigningrequests,certificatesigningrequests/approval")
	s.mustKubectl(t, "", "create", "clusterrolebinding", "csr-approver", "--clusterrole=csr-approver", "--user=approver")
	_, err := s.kubectl(t, "", "--as=approver", "certificate", "approve", "alice")
	expectKubectlError(t, err, `Error from server (Forbidden): certificatesigningrequests.certificates.k8s.io "alice" is forbidden: user not permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client"`)
	expectOutput(t, s.mustKubectl(t, "", "certificate", "approve", "alice"), "certificatesigningrequest.certificates.k8s.io/alice approved")
	rows := tableRows(s.mustKubectl(t, "", "get", "csr", "alice"))
	if len(rows) != 2 || rows[1][len(rows[1])-1] != "Approved" || rows[1][2] != "kubernetes.io/kube-apiserver-client" {
		t.Errorf("get csr after approval: %v", rows)
	}
}

// certificateRequest is a PEM certificate request for common name cn.
func certificateRequest(t *testing.T, cn string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func mustYAML(t *testing.T, data string, v any) {
	t.Helper()
	if err := yaml.Unmarshal([]byte(data), v); err != nil {
		t.Fatalf("%v:\n%s", err, data)
	}
}
