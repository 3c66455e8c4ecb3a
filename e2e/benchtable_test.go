package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestBenchTable is issue 17's table, run on demand only (make bench):
//
//	SQLKUBE_BENCH_TABLE=1 go test ./e2e -run TestBenchTable -v -timeout 1h
//
// On each backend it starts sqlkube in the production configuration (TLS with HTTP/2, RBAC
// with 1,000 RoleBindings present, audit at Metadata level to a file, metrics and priority and
// fairness on as by default) and drives it with the
// binary's load tool as an ordinary user with a client certificate: creates, updates and gets of
// 1 KiB custom resources, a full list of 10,000, watch latency with 1,000 watchers, and the
// server's CPU per create and resident memory after 10,000 objects. The table is logged and, with
// SQLKUBE_BENCH_OUT=FILE, written to FILE as Markdown.
func TestBenchTable(t *testing.T) {
	if os.Getenv("SQLKUBE_BENCH_TABLE") == "" {
		t.Skip("a benchmark: set SQLKUBE_BENCH_TABLE=1 (make bench)")
	}
	var rows []benchRow
	forEachServerWith(t, productionArgs(t), func(t *testing.T, s *sqlkubeServer) {
		rows = append(rows, benchTable(t, s)...)
	})
	table := formatBenchTable(rows)
	t.Log("\n" + table)
	if out := os.Getenv("SQLKUBE_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// productionArgs are the flags the production configuration adds to the e2e servers' (TLS, HTTP/2,
// metrics and priority and fairness are on by default): audit at Metadata level to a file.
func productionArgs(t *testing.T) []string {
	dir := t.TempDir()
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--audit-policy-file=" + policy, "--audit-log-path=" + filepath.Join(dir, "audit.log")}
}

// benchRow is one figure of one backend.
type benchRow struct{ backend, figure, value string }

const benchResource = "bench.sqlkube.io/v1/widgets"

func benchTable(t *testing.T, s *sqlkubeServer) []benchRow {
	backend := backendOf(s.dsn)
	user := s.benchUser(t)
	var rows []benchRow
	add := func(figure, format string, args ...any) {
		rows = append(rows, benchRow{backend, figure, fmt.Sprintf(format, args...)})
		t.Logf("%s: %s", figure, rows[len(rows)-1].value)
	}
	bench := func(args ...string) benchReport {
		return runBenchAs(t, s, user, append([]string{"--resource", benchResource, "--create-crd"}, args...)...)
	}

	cpu := s.cpuTime(t)
	r := bench("--namespace", "creates", "--op", "create", "--concurrency", "64", "--duration", "10s")
	perCreate := (s.cpuTime(t) - cpu) / time.Duration(r.Ops)
	add("creates/s, 64 clients", "%.0f (p99 %.1f ms), server CPU %d µs/create", r.OpsPerSecond, r.LatencyMs.P99, perCreate.Microseconds())
	r = bench("--namespace", "creates-1", "--op", "create", "--concurrency", "1", "--duration", "5s")
	add("creates/s, 1 client", "%.0f (p99 %.2f ms)", r.OpsPerSecond, r.LatencyMs.P99)
	r = bench("--namespace", "updates", "--op", "update", "--concurrency", "64", "--objects", "1000", "--duration", "10s")
	add("updates/s, 64 clients", "%.0f (p99 %.1f ms)", r.OpsPerSecond, r.LatencyMs.P99)
	r = bench("--namespace", "updates", "--op", "get", "--concurrency", "64", "--objects", "1000", "--duration", "10s")
	add("gets/s, 64 clients", "%.0f (p99 %.1f ms)", r.OpsPerSecond, r.LatencyMs.P99)
	r = bench("--namespace", "list", "--op", "list", "--concurrency", "1", "--objects", "10000", "--page-size", "10000", "--duration", "5s")
	add("full list of 10k objects", "%.0f ms (p99 %.0f ms)", r.LatencyMs.P50, r.LatencyMs.P99)
	for _, rate := range []string{"10", "100"} {
		r = bench("--namespace", "watch-"+rate, "--op", "watch", "--watchers", "1000", "--rate", rate, "--duration", "10s")
		add("watch p99, 1,000 watchers, "+rate+" writes/s", "%.1f ms", r.LatencyMs.P99)
	}
	add("resident memory after 10k objects", "%d MiB", memoryAfter(t, backend, 10000)>>10)
	return rows
}

// benchUser mints a client certificate for an ordinary user (not system:masters, so that RBAC
// and priority and fairness apply to it), binds it to cluster-admin, and writes 1,000 other
// RoleBindings, as the production configuration has. It returns the user's kubeconfig.
func (s *sqlkubeServer) benchUser(t *testing.T) string {
	t.Helper()
	admin := kubernetes.NewForConfigOrDie(s.restConfig())
	bindGroup(t, admin, "benchers", "cluster-admin")
	ctx := context.Background()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rbac-load"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		_, err := admin.RbacV1().RoleBindings("rbac-load").Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "user-" + strconv.Itoa(i)},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "user-" + strconv.Itoa(i)}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	return s.userKubeconfig(t, "bencher", "benchers")
}

// cpuTime is the server process's user and system CPU time so far.
func (s *sqlkubeServer) cpuTime(t *testing.T) time.Duration {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.proc.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command name (which is in parentheses): utime and stime are the 12th
	// and 13th, in clock ticks of 1/100 s.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// memoryAfter starts a server with default settings on a new database of backend, stores n
// objects through it and returns its resident memory in kB.
func memoryAfter(t *testing.T, backend string, n int) int64 {
	t.Helper()
	s := startServer(t, newDSN(t, backend))
	runBench(t, s, "--resource", benchResource, "--create-crd", "--namespace", "memory", "--op", "create", "--concurrency", "64", "--count", strconv.Itoa(n))
	return processMemory(t, s.proc.cmd.Process.Pid)["VmRSS"]
}

// formatBenchTable lays rows out as a Markdown table, one column per backend.
func formatBenchTable(rows []benchRow) string {
	var backends, figures []string
	values := map[[2]string]string{}
	for _, r := range rows {
		if !slices.Contains(backends, r.backend) {
			backends = append(backends, r.backend)
		}
		if !slices.Contains(figures, r.figure) {
			figures = append(figures, r.figure)
		}
		values[[2]string{r.figure, r.backend}] = r.value
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| | %s |\n|---|%s\n", strings.Join(backends, " | "), strings.Repeat("---|", len(backends)))
	for _, f := range figures {
		b.WriteString("| " + f)
		for _, be := range backends {
			b.WriteString(" | " + values[[2]string{f, be}])
		}
		b.WriteString(" |\n")
	}
	return b.String()
}
