package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sqlkube/sqlkube/cmd/sqlkube/bench"
)

// TestBenchTable is issue 33's table, run on demand only (make bench):
//
//	SQLKUBE_BENCH_TABLE=1 go test ./e2e -run TestBenchTable -v -timeout 2h
//
// It measures, in one sitting, sqlkube on SQLite, sqlkube on PostgreSQL and, when it can,
// kube-apiserver on etcd, each in the production configuration: TLS with HTTP/2, RBAC with 1,000
// RoleBindings present, audit at Metadata level to a file, metrics and priority and fairness on
// as by default, the load sent by the binary's load tool as an ordinary user with a client
// certificate (bound to cluster-admin through a group), on 1 KiB custom resources. Server CPU
// and memory are those of every process that serves the API: sqlkube's, or kube-apiserver's and
// etcd's (on PostgreSQL the database's own are not counted).
//
// kube-apiserver's column needs SQLKUBE_KUBE_APISERVER (the binary, as e2e/kuberef builds it) and
// SQLKUBE_BENCH_KUBEFULL (e2e/kuberef's cmd/kubefull, which starts it on an etcd process of its
// own; make bench builds it); without them the table says why the column is missing. The table
// is logged and, with SQLKUBE_BENCH_OUT=FILE, written to FILE as Markdown.
func TestBenchTable(t *testing.T) {
	if os.Getenv("SQLKUBE_BENCH_TABLE") == "" {
		t.Skip("a benchmark: set SQLKUBE_BENCH_TABLE=1 (make bench)")
	}
	binary(t) // the load tool
	table := benchTable{columns: []benchColumn{sqlkubeColumn("SQLite"), sqlkubeColumn("PostgreSQL"), kubeColumn()}}
	table.loadBefore = loadAverage(t)
	for _, col := range table.columns {
		if col.missing != "" {
			continue
		}
		t.Run(col.name, func(t *testing.T) { table.cells = append(table.cells, measureColumn(t, col)...) })
	}
	table.loadAfter = loadAverage(t)
	text := table.String()
	t.Log("\n" + text)
	if out := os.Getenv("SQLKUBE_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// benchServer is a running server the table measures, whichever it is.
type benchServer struct {
	url string
	// admin and user are kubeconfigs: a member of system:masters, and the ordinary user
	// (bencher, in the group benchers) the load runs as.
	admin, user string
	// pids are the processes that serve the API: their CPU and memory are the server's.
	pids []int
}

// benchColumn is one server of the table: start starts a fresh one in the production
// configuration (each figure that needs a fresh server starts its own), unless missing says why
// the column cannot be measured.
type benchColumn struct {
	name    string
	start   func(t *testing.T) benchServer
	missing string
}

func sqlkubeColumn(backend string) benchColumn {
	return benchColumn{name: "sqlkube " + backend, start: func(t *testing.T) benchServer {
		s := startServer(t, newDSN(t, backend), productionArgs(t)...)
		return benchServer{url: s.URL(), admin: s.kubeconfigPath(), user: s.userKubeconfig(t, "bencher", "benchers"),
			pids: []int{s.proc.cmd.Process.Pid}}
	}}
}

// kubeColumn is kube-apiserver on etcd, started by e2e/kuberef's cmd/kubefull.
func kubeColumn() benchColumn {
	col := benchColumn{name: "kube-apiserver + etcd"}
	apiserver, kubefull := os.Getenv("SQLKUBE_KUBE_APISERVER"), os.Getenv("SQLKUBE_BENCH_KUBEFULL")
	switch {
	case apiserver == "":
		col.missing = "SQLKUBE_KUBE_APISERVER is not set (a kube-apiserver v1.37.2 binary built as e2e/kuberef builds it; building one takes ~30 minutes)"
	case kubefull == "":
		col.missing = "SQLKUBE_BENCH_KUBEFULL is not set (e2e/kuberef's cmd/kubefull, which make bench builds)"
	}
	col.start = func(t *testing.T) benchServer { return startKubeFull(t, kubefull, apiserver) }
	return col
}

// startKubeFull runs cmd/kubefull and reads the server it started from its first line; the
// servers stop when the test ends and closes kubefull's standard input.
func startKubeFull(t *testing.T, kubefull, apiserver string) benchServer {
	t.Helper()
	ready := runKubeFull(t, kubefull, apiserver)
	return benchServer{url: ready.URL, admin: ready.AdminKubeconfig, user: ready.UserKubeconfig, pids: ready.PIDs}
}

// kubeFullReady is the line cmd/kubefull writes once its server is ready.
type kubeFullReady struct {
	URL               string            `json:"url"`
	AdminKubeconfig   string            `json:"adminKubeconfig"`
	UserKubeconfig    string            `json:"userKubeconfig"`
	PIDs              []int             `json:"pids"`
	Kubeconfigs       map[string]string `json:"kubeconfigs"`
	CAFile            string            `json:"caFile"`
	ServiceAccountKey string            `json:"serviceAccountKey"`
}

// runKubeFull runs cmd/kubefull with extra flags until the test ends and answers its ready line.
func runKubeFull(t *testing.T, kubefull, apiserver string, extra ...string) kubeFullReady {
	t.Helper()
	cmd := exec.Command(kubefull, append([]string{"--kube-apiserver", apiserver, "--dir", t.TempDir(), "--user", "bencher", "--group", "benchers"}, extra...)...)
	var log syncBuffer
	cmd.Stderr = &log
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	var ready kubeFullReady
	// kubefull exits, ending its output, if the server does not become ready in its own time.
	if err := json.NewDecoder(stdout).Decode(&ready); err != nil {
		t.Fatalf("kubefull: %v\n%s", err, log.String())
	}
	return ready
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

const benchResource = "bench.sqlkube.io/v1/widgets"

// The table's rows, in issue 33's order.
const (
	figCreates1  = "creates/s, 1 client (p99)"
	figCreates64 = "creates/s, 64 clients (p99)"
	figUpdates   = "updates/s, 64 clients"
	figGets      = "gets/s, 64 clients"
	figList      = "full list of 10,000"
	figWatch     = "watch p99, 1,000 watchers, 10 writes/s"
	figMemory    = "resident memory after 10,000 objects"
	figCPU       = "server CPU per create / per get"
	figWatchCPU  = "server CPU per watch event delivered (the watch figure's run)"
	figIdle      = "10,000 idle watches over TLS: memory growth"
)

var benchFigures = []string{figCreates1, figCreates64, figUpdates, figGets, figList, figWatch, figMemory, figCPU, figWatchCPU, figIdle}

// benchCell is one figure of one column: the values a ratio compares, one by one, and the text.
type benchCell struct {
	column, figure string
	values         []float64
	text           string
}

// measureColumn measures every figure of col: the throughput and latency figures on one server,
// memory after 10,000 objects and idle watches each on a fresh one.
func measureColumn(t *testing.T, col benchColumn) []benchCell {
	var cells []benchCell
	add := func(figure, text string, values ...float64) {
		cells = append(cells, benchCell{col.name, figure, values, text})
		t.Logf("%s: %s", figure, text)
	}
	if os.Getenv("SQLKUBE_BENCH_MEMORY_ONLY") != "" {
		measureMemory(t, col, add)
		return cells
	}
	s := prepareBenchServer(t, col)
	bench := func(args ...string) benchReport {
		return runBenchAt(t, s.url, s.user, 5*time.Minute, append([]string{"--resource", benchResource, "--create-crd"}, args...)...)
	}
	r := bench("--namespace", "creates-1", "--op", "create", "--concurrency", "1", "--duration", "5s")
	add(figCreates1, rateText(r), r.OpsPerSecond)
	cpuOf := serverPIDArgs(s.pids...)
	r = bench(append([]string{"--namespace", "creates", "--op", "create", "--concurrency", "64", "--duration", "10s"}, cpuOf...)...)
	perCreate := r.ServerCPUMicrosPerOp
	add(figCreates64, rateText(r), r.OpsPerSecond)
	r = bench("--namespace", "updates", "--op", "update", "--concurrency", "64", "--objects", "1000", "--duration", "10s")
	add(figUpdates, thousands(r.OpsPerSecond), r.OpsPerSecond)
	r = bench(append([]string{"--namespace", "updates", "--op", "get", "--concurrency", "64", "--objects", "1000", "--duration", "10s"}, cpuOf...)...)
	perGet := r.ServerCPUMicrosPerOp
	add(figGets, thousands(r.OpsPerSecond), r.OpsPerSecond)
	r = bench("--namespace", "list", "--op", "list", "--concurrency", "1", "--objects", "10000", "--page-size", "10000", "--duration", "5s")
	add(figList, millis(r.LatencyMs.P50), r.LatencyMs.P50)
	r = bench(append([]string{"--namespace", "watch", "--op", "watch", "--watchers", "1000", "--rate", "10", "--duration", "10s"}, cpuOf...)...)
	add(figWatch, millis(r.LatencyMs.P99), r.LatencyMs.P99)
	perEvent := r.ServerCPUMicrosPerOp

	add(figCPU, fmt.Sprintf("%s µs / %s µs", thousands(perCreate), thousands(perGet)), perCreate, perGet)
	add(figWatchCPU, fmt.Sprintf("%s µs", thousands(perEvent)), perEvent)
	measureMemory(t, col, add)
	return cells
}

// measureMemory adds the memory figures of col, each measured on a fresh server: resident memory
// after 10,000 objects and the growth 10,000 idle watches cause. SQLKUBE_BENCH_MEMORY_ONLY=1
// measures only these, for a quicker before-and-after of a change to memory.
func measureMemory(t *testing.T, col benchColumn, add func(figure, text string, values ...float64)) {
	mib := float64(memoryAfter(t, col, 10000)) / 1024
	add(figMemory, fmt.Sprintf("%.0f MiB", mib), mib)
	growth, idle := idleWatchGrowth(t, col, 10000)
	add(figIdle, fmt.Sprintf("%.0f MiB (%.0f KiB per watch, %d connections)", float64(growth)/1024, float64(growth)/10000, idle.Watch.Connections),
		float64(growth)/1024)
}

// prepareBenchServer starts a server of col with what the production configuration has.
func prepareBenchServer(t *testing.T, col benchColumn) benchServer {
	t.Helper()
	s := col.start(t)
	cfg, err := clientcmd.BuildConfigFromFlags(s.url, s.admin)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS = -1
	addProductionBindings(t, kubernetes.NewForConfigOrDie(cfg))
	return s
}

// benchUser gives s the production configuration's RoleBindings and returns the kubeconfig of
// the ordinary user the load runs as.
func (s *sqlkubeServer) benchUser(t *testing.T) string {
	t.Helper()
	addProductionBindings(t, kubernetes.NewForConfigOrDie(s.restConfig()))
	return s.userKubeconfig(t, "bencher", "benchers")
}

// addProductionBindings binds the group benchers (the ordinary user's, not system:masters, so
// that RBAC and priority and fairness apply to it) to cluster-admin and writes 1,000 other
// RoleBindings, as the production configuration has.
func addProductionBindings(t *testing.T, admin kubernetes.Interface) {
	t.Helper()
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
}

// memoryAfter starts a fresh server of col, stores n objects through it and returns its resident
// memory in KiB.
func memoryAfter(t *testing.T, col benchColumn, n int) int64 {
	t.Helper()
	s := prepareBenchServer(t, col)
	runBenchAt(t, s.url, s.user, 10*time.Minute, "--resource", benchResource, "--create-crd", "--namespace", "memory",
		"--op", "create", "--concurrency", "64", "--count", strconv.Itoa(n))
	return resident(t, s.pids)
}

// idleWatchGrowth starts a fresh server of col, opens n idle watches on it multiplexed over
// HTTP/2 as informers are (sqlkube bench --op watch --idle) and returns how far its resident
// memory rose above what it was before, at its peak while they were open, in KiB. The CRD and
// namespace exist before the first reading, so that only the watches count.
func idleWatchGrowth(t *testing.T, col benchColumn, n int) (int64, benchReport) {
	t.Helper()
	s := prepareBenchServer(t, col)
	args := []string{"--resource", benchResource, "--create-crd", "--namespace", "idle"}
	runBenchAt(t, s.url, s.user, 5*time.Minute, append(args, "--op", "create", "--concurrency", "1", "--count", "1")...)
	before := resident(t, s.pids)
	done := make(chan struct{})
	var rep benchReport
	var err error
	go func() {
		defer close(done)
		rep, err = execBenchAt(s.url, s.user, 10*time.Minute, append(args, "--op", "watch", "--idle", "--watchers", strconv.Itoa(n), "--duration", "10s")...)
	}()
	peak := before
	for sample := time.NewTicker(200 * time.Millisecond); ; {
		select {
		case <-sample.C:
			peak = max(peak, resident(t, s.pids))
			continue
		case <-done:
			sample.Stop()
		}
		break
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep.Watch == nil || rep.Watch.Connected != n || rep.Errors != 0 {
		t.Errorf("idle watches: %+v, errors %v %v; want all %d connected", rep.Watch, rep.ErrorsByCode, rep.ErrorSamples, n)
	}
	return peak - before, rep
}

// cpuTime is the server process's user and system CPU time so far.
func (s *sqlkubeServer) cpuTime(t *testing.T) time.Duration {
	t.Helper()
	cpu, err := bench.ProcessCPU(s.proc.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cpu
}

// resident is the processes' resident memory together, in KiB.
func resident(t *testing.T, pids []int) int64 {
	t.Helper()
	var kib int64
	for _, pid := range pids {
		kib += processMemory(t, pid)["VmRSS"]
	}
	return kib
}

// loadAverage is the machine's 1-, 5- and 15-minute load averages, as uptime prints them.
func loadAverage(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(data))[:3], ", ")
}

func rateText(r benchReport) string {
	return fmt.Sprintf("%s (%s)", thousands(r.OpsPerSecond), millis(r.LatencyMs.P99))
}

// millis writes a duration in ms as issue 33's table does: one decimal under 10 ms.
func millis(ms float64) string {
	if ms < 10 {
		return fmt.Sprintf("%.1f ms", ms)
	}
	return thousands(ms) + " ms"
}

// thousands rounds v and groups its digits by three: 8336.4 is "8,336".
func thousands(v float64) string {
	digits := strconv.FormatInt(int64(v+0.5), 10)
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return b.String()
}
