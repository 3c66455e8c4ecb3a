package kuberef

import (
	"testing"
	"time"
)

// TestFullConformance compares sqlkube with the whole kube-apiserver (authentication by client
// certificates, RBAC, admission) on the scenarios that need more than custom resources: the same
// identities send the same requests to each server, scenarios first, then random sequences.
func TestFullConformance(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	bin, err := BuildKubeAPIServer(dir)
	if err != nil {
		t.Fatal(err)
	}
	built := time.Now()
	kube, err := StartFull(bin, dir)
	if err != nil {
		t.Fatalf("starting kube-apiserver: %v", err)
	}
	t.Cleanup(kube.Stop)
	t.Logf("kube-apiserver built in %s, ready in %s", built.Sub(start).Round(time.Second), time.Since(built).Round(100*time.Millisecond))
	hook, err := startAdmissionWebhook()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hook.stop)
	ref := endpoint{name: "kube-apiserver", url: kube.URL, client: kube.Client, clientFor: kube.ClientFor, auditLog: kube.AuditLog}
	sqlkubes := startSqlkubes(t, dir, true)
	t.Run("admission chain", func(t *testing.T) { compareAdmissionChains(t, dir, sqlkubes) })
	l := newLockstep(ref, sqlkubes).compareHeaders().ignoreListRevisions()
	runScenarios(t, l, oracleScenarios(hook))
	t.Run("randomized as identities", func(t *testing.T) { runRandomAsIdentities(t, l) })
}
