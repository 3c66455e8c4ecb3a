package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRestartMemory is issue 20's restart benchmark, run on demand only (make bench-restart):
//
//	SQLKUBE_RESTART_OBJECTS=1000000 go test ./e2e -run TestRestartMemory -v -timeout 3h
//
// On each backend it stores N custom resources of 1 KiB with the bench tool, restarts the
// server, and reports the time to ready, the peak resident memory (VmHWM) over the first minute
// after the restart, a burst of gets included, and the resident and anonymous memory at its end.
// An owner deleted right after the restart must still take its dependent with it; the report
// says how long after the restart.
func TestRestartMemory(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SQLKUBE_RESTART_OBJECTS"))
	if n <= 0 {
		t.Skip("a benchmark: set SQLKUBE_RESTART_OBJECTS to the number of objects to restart on")
	}
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		s.runBench(t, "--resource=example.com/v1/widgets", "--create-crd", "--namespace=restart", "--op=create", fmt.Sprintf("--count=%d", n))
		owner, dependent := s.ownerAndDependent(t)
		s.stop()

		started := time.Now()
		s.restart()
		ready := time.Since(started)
		// The collector acts on an owner deleted at once; how soon is part of the report.
		if err := s.clientset().CoreV1().ConfigMaps("default").Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 2*time.Minute, "the dependent collected after the restart", func() (bool, error) {
			_, err := s.clientset().CoreV1().ConfigMaps("default").Get(ctx, dependent.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		collected := time.Since(started)
		waitUntil(started.Add(20 * time.Second))
		s.runBench(t, "--namespace=restart-gets", "--op=get", "--objects=1000", "--duration=10s")
		waitUntil(started.Add(60 * time.Second))
		mem := processMemory(t, s.proc.cmd.Process.Pid)
		t.Logf("%d objects: ready %d ms after the restart; a dependent collected %.1f s after it; peak resident (VmHWM) over the first minute %d MiB; at 60 s resident %d MiB, anonymous %d MiB, file-backed %d MiB",
			n, ready.Milliseconds(), collected.Seconds(), mem["VmHWM"]>>10, mem["VmRSS"]>>10, mem["RssAnon"]>>10, mem["RssFile"]>>10)
	})
}

// runBench runs the binary's load tool against s as its admin.
func (s *sqlkubeServer) runBench(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"bench", "--kubeconfig=" + s.kubeconfigPath(), "--server=" + s.URL(), "--concurrency=64"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sqlkube bench %v: %v\n%s", args, err, out)
	}
}

// ownerAndDependent creates a ConfigMap owned by another.
func (s *sqlkubeServer) ownerAndDependent(t *testing.T) (owner, dependent *corev1.ConfigMap) {
	t.Helper()
	cms := s.clientset().CoreV1().ConfigMaps("default")
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dependent, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return owner, dependent
}

// processMemory reads the kB figures of /proc/PID/status.
func processMemory(t *testing.T, pid int) map[string]int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mem := map[string]int64{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		name, value, _ := strings.Cut(sc.Text(), ":")
		if kb, ok := strings.CutSuffix(strings.TrimSpace(value), " kB"); ok {
			mem[name], _ = strconv.ParseInt(kb, 10, 64)
		}
	}
	return mem
}

// waitUntil sleeps until the time the benchmark's schedule names (not a synchronisation: the
// schedule is what is measured).
func waitUntil(deadline time.Time) { time.Sleep(time.Until(deadline)) }
