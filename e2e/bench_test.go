package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// benchReport is the part of `sqlkube bench --output json` the checks read.
type benchReport struct {
	Ops          int64             `json:"ops"`
	OpsPerSecond float64           `json:"opsPerSecond"`
	Errors       int64             `json:"errors"`
	ErrorsByCode map[string]int64  `json:"errorsByCode"`
	ErrorSamples map[string]string `json:"errorSamples"`
	LatencyMs    struct {
		P50, P90, P99, Max float64
	} `json:"latencyMs"`
	// ServerCPUMicrosPerOp is the server's CPU per operation over the measured part of the run
	// (--server-pid).
	ServerCPUMicrosPerOp float64 `json:"serverCPUMicrosPerOp"`
	Watch                *struct {
		Connected      int   `json:"connected"`
		Connections    int64 `json:"connections"`
		EventsExpected int64 `json:"eventsExpected"`
		EventsLost     int64 `json:"eventsLost"`
	} `json:"watch"`
}

// TestBench runs the load tool built into the binary against a server on each backend, for a few
// seconds per operation, and checks that its report is sane: throughput, no errors, ordered
// percentiles, and for watch every event delivered.
func TestBench(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		t.Run("create", func(t *testing.T) {
			runBench(t, s, "--op", "create", "--duration", "3s", "--concurrency", "16")
		})
		t.Run("update custom resources", func(t *testing.T) {
			runBench(t, s, "--op", "update", "--resource", "bench.sqlkube.io/v1/widgets", "--create-crd",
				"--objects", "100", "--concurrency", "8", "--duration", "2s")
		})
		t.Run("list", func(t *testing.T) {
			runBench(t, s, "--op", "list", "--objects", "300", "--page-size", "100", "--concurrency", "4", "--duration", "2s")
		})
		t.Run("watch", func(t *testing.T) {
			rep := runBench(t, s, "--op", "watch", "--watchers", "20", "--rate", "50", "--duration", "2s")
			if w := rep.Watch; w == nil || w.Connected != 20 || w.EventsExpected == 0 || w.EventsLost != 0 {
				t.Errorf("watch summary = %+v, want 20 connected watchers and every event delivered", w)
			}
		})
		// Each run deleted the objects it created.
		left, err := s.clientset().CoreV1().ConfigMaps("bench").List(ctx, metav1.ListOptions{LabelSelector: "bench.sqlkube.io/run"})
		if err != nil || len(left.Items) != 0 {
			t.Errorf("after the runs, the bench namespace holds %d of their ConfigMaps (%v)", len(left.Items), err)
		}
	})
}

// runBench runs `sqlkube bench --output json` with args against s as its admin, checks the report
// and returns it.
func runBench(t *testing.T, s *sqlkubeServer, args ...string) benchReport {
	t.Helper()
	return runBenchAs(t, s, s.kubeconfigPath(), args...)
}

// runBenchAs is runBench with the credentials of kubeconfig.
func runBenchAs(t *testing.T, s *sqlkubeServer, kubeconfig string, args ...string) benchReport {
	t.Helper()
	return runBenchFor(t, s, kubeconfig, 5*time.Minute, args...)
}

// runBenchFor is runBenchAs for runs that may take up to timeout (loading a million objects).
func runBenchFor(t *testing.T, s *sqlkubeServer, kubeconfig string, timeout time.Duration, args ...string) benchReport {
	t.Helper()
	return runBenchAt(t, s.URL(), kubeconfig, timeout, args...)
}

// runBenchAt is runBenchFor against any API server at url (kube-apiserver too).
func runBenchAt(t *testing.T, url, kubeconfig string, timeout time.Duration, args ...string) benchReport {
	t.Helper()
	rep, err := execBenchAt(url, kubeconfig, timeout, args...)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ops == 0 || rep.OpsPerSecond <= 0 {
		t.Errorf("no throughput: %d ops, %.1f ops/s", rep.Ops, rep.OpsPerSecond)
	}
	if rep.Errors != 0 || len(rep.ErrorsByCode) != 0 {
		t.Errorf("%d errors: %v %v", rep.Errors, rep.ErrorsByCode, rep.ErrorSamples)
	}
	if l := rep.LatencyMs; l.P50 > l.P90 || l.P90 > l.P99 || l.P99 > l.Max || l.Max <= 0 {
		t.Errorf("latency percentiles out of order: %+v", l)
	}
	t.Logf("%v: %.0f ops/s, p50 %.2f ms, p99 %.2f ms", args, rep.OpsPerSecond, rep.LatencyMs.P50, rep.LatencyMs.P99)
	return rep
}

// execBench runs `sqlkube bench --output json` and decodes its report; it does not touch t, so
// that several can run at once from other goroutines.
func execBench(s *sqlkubeServer, kubeconfig string, timeout time.Duration, args ...string) (benchReport, error) {
	return execBenchAt(s.URL(), kubeconfig, timeout, args...)
}

// execBenchAt is execBench against any API server at url.
func execBenchAt(url, kubeconfig string, timeout time.Duration, args ...string) (benchReport, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binaryPath, append([]string{"bench", "--kubeconfig", kubeconfig, "--server", url, "--output", "json"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var rep benchReport
	if err := cmd.Run(); err != nil {
		return rep, fmt.Errorf("sqlkube bench %v: %v\nstderr:\n%s", args, err, stderr.String())
	}
	dec := json.NewDecoder(&stdout)
	if err := dec.Decode(&rep); err != nil || dec.More() {
		return rep, fmt.Errorf("stdout is not one JSON object (%v):\n%s", err, stdout.String())
	}
	return rep, nil
}

// serverPIDArgs are the load tool's --server-pid flags for pids: the tool reports their CPU per
// operation over the measured part of its run, without the working set it creates first.
func serverPIDArgs(pids ...int) []string {
	var args []string
	for _, pid := range pids {
		args = append(args, "--server-pid", strconv.Itoa(pid))
	}
	return args
}
