package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/sqlkube/sqlkube/cmd/sqlkube/bench"
)

// TestBenchCluster is the density run of issues 47 and 43, on demand only (make bench-cluster):
// N simulated nodes (one kwok), then one Deployment of P pods, scheduled by the real kube-scheduler
// and run by kube-controller-manager's controllers (each under its own identity, with the client
// rate limits SQLKUBE_BENCH_CLUSTER_QPS and _BURST), then the Deployment deleted; on sqlkube
// SQLite, sqlkube PostgreSQL and, with SQLKUBE_KUBE_APISERVER and SQLKUBE_BENCH_KUBEFULL as for
// make bench, kube-apiserver on etcd with the same security (TLS, client certificates, RBAC,
// audit at Metadata to a file). The Markdown table is logged and written to SQLKUBE_BENCH_OUT;
// with SQLKUBE_CPU_PROFILE_DIR, a CPU profile of sqlkube while the pods start is saved there.
func TestBenchCluster(t *testing.T) {
	if os.Getenv("SQLKUBE_BENCH_CLUSTER") == "" {
		t.Skip("a benchmark: set SQLKUBE_BENCH_CLUSTER=1 (make bench-cluster)")
	}
	bins := clusterBinariesOrSkip(t)
	run := densityRun{nodes: envInt(t, "SQLKUBE_BENCH_CLUSTER_NODES", 100), pods: envInt(t, "SQLKUBE_BENCH_CLUSTER_PODS", 3000),
		opt: clusterOptions{qps: envInt(t, "SQLKUBE_BENCH_CLUSTER_QPS", 100), burst: envInt(t, "SQLKUBE_BENCH_CLUSTER_BURST", 200),
			leaseSeconds: 40, gracePeriod: 50 * time.Second}}
	table := clusterTable{run: run, loadBefore: loadAverage(t)}
	for _, backend := range []string{"SQLite", "PostgreSQL"} {
		t.Run("sqlkube "+backend, func(t *testing.T) {
			table.add(run.measure(t, bins, sqlkubeClusterColumn(t, backend)))
		})
	}
	apiserver, kubefull := os.Getenv("SQLKUBE_KUBE_APISERVER"), os.Getenv("SQLKUBE_BENCH_KUBEFULL")
	if apiserver != "" && kubefull != "" {
		t.Run("kube-apiserver + etcd", func(t *testing.T) {
			table.add(run.measure(t, bins, kubeClusterColumn(t, kubefull, apiserver)))
		})
	} else {
		table.missing = "SQLKUBE_KUBE_APISERVER and SQLKUBE_BENCH_KUBEFULL are not both set"
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

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}

// sqlkubeClusterColumn starts sqlkube on a fresh database of backend as a cluster's control
// plane in the production configuration; on PostgreSQL the database's backends count as the
// server's CPU.
func sqlkubeClusterColumn(t *testing.T, backend string) clusterAPI {
	dsn := newDSN(t, backend)
	s := startServer(t, dsn, append(slices.Clone(clusterArgs), productionArgs(t)...)...)
	api := s.clusterAPIOf(t, "sqlkube "+backend)
	if backend == "PostgreSQL" {
		api.cpu = postgresBackendsCPU(t, dsn)
	}
	if dir := os.Getenv("SQLKUBE_CPU_PROFILE_DIR"); dir != "" {
		api.profile = func(seconds int) error {
			return s.saveProfile("profile?seconds="+strconv.Itoa(seconds), filepath.Join(dir, "cluster-"+strings.ToLower(backend)+".pprof"))
		}
	}
	return api
}

// kubeClusterColumn starts kube-apiserver on etcd (cmd/kubefull) with the components' kubeconfigs.
func kubeClusterColumn(t *testing.T, kubefull, apiserver string) clusterAPI {
	r := runKubeFull(t, kubefull, apiserver, "--components")
	return clusterAPI{name: "kube-apiserver + etcd", url: r.URL, admin: r.AdminKubeconfig, kubeconfigs: r.Kubeconfigs,
		caFile: r.CAFile, saKey: r.ServiceAccountKey, pids: r.PIDs}
}

// postgresBackendsCPU follows the CPU of PostgreSQL's backend processes serving dsn's database
// (found by their process title, "postgres: USER DATABASE ...") from now on: it samples them
// every second, so that a backend that exits loses at most its last second. The function it
// answers is the CPU they used since the call.
func postgresBackendsCPU(t *testing.T, dsn string) func() time.Duration {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	database := strings.TrimPrefix(u.Path, "/")
	var mu sync.Mutex
	base, last := map[int]time.Duration{}, map[int]time.Duration{}
	sample := func(first bool) {
		for _, pid := range processesTitled("postgres: ", " "+database+" ") {
			cpu, err := bench.ProcessCPU(pid)
			if err != nil {
				continue
			}
			mu.Lock()
			if _, seen := last[pid]; !seen && first {
				base[pid] = cpu
			}
			last[pid] = cpu
			mu.Unlock()
		}
	}
	sample(true)
	stop := make(chan struct{})
	go func() {
		for tick := time.NewTicker(time.Second); ; {
			select {
			case <-tick.C:
				sample(false)
			case <-stop:
				tick.Stop()
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop) })
	return func() time.Duration {
		sample(false)
		mu.Lock()
		defer mu.Unlock()
		var total time.Duration
		for pid, cpu := range last {
			total += cpu - base[pid]
		}
		return total
	}
}

// processesTitled are the processes whose command line starts with prefix and contains part.
func processesTitled(prefix, part string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		title := strings.ReplaceAll(string(cmdline), "\x00", " ")
		if strings.HasPrefix(title, prefix) && strings.Contains(title, part) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// densityRun is the benchmark's workload.
type densityRun struct {
	nodes, pods int
	opt         clusterOptions
}

// clusterFigures are one column's measurements.
type clusterFigures struct {
	name                            string
	nodesReady, podsRunning, delete time.Duration
	startupP50, startupP99          time.Duration
	serverCPU                       time.Duration
	serverPeakRSS                   int64 // KiB
	kcmCPU, schedulerCPU, kwokCPU   time.Duration
}

// measure runs the workload on api with fresh components and measures it.
func (r densityRun) measure(t *testing.T, bins clusterBinaries, api clusterAPI) clusterFigures {
	f := clusterFigures{name: api.name}
	client := api.clientset(t)
	kcm, scheduler := startControlPlane(t, bins, api, r.opt)
	kwok := startKwok(t, bins, api, "bench", r.opt)
	cpu := newCPUMeter(t, api, kcm, scheduler, kwok)
	watcher := watchPods(t, client, "density")
	start := time.Now()
	createNodesConcurrently(t, client, r.nodes)
	waitAllNodes(t, client, r.nodes, false, 10*time.Minute)
	f.nodesReady = time.Since(start)
	t.Logf("%d nodes Ready in %s", r.nodes, f.nodesReady.Round(100*time.Millisecond))
	// Not timed: the scheduler uses a node once kube-controller-manager has lifted the not-ready
	// taint it puts on a new node.
	waitAllNodes(t, client, r.nodes, true, 10*time.Minute)

	profiled := make(chan error, 1)
	if api.profile != nil {
		go func() { profiled <- api.profile(30) }()
	} else {
		profiled <- nil
	}
	start = time.Now()
	createDensityDeployment(t, client, r.pods)
	watcher.waitRunning(t, r.pods, 20*time.Minute)
	f.podsRunning = time.Since(start)
	f.startupP50, f.startupP99 = watcher.startupPercentiles()
	t.Logf("%d pods Running in %s (startup p50 %s, p99 %s)", r.pods, f.podsRunning.Round(100*time.Millisecond), f.startupP50, f.startupP99)
	if err := <-profiled; err != nil {
		t.Errorf("CPU profile: %v", err)
	}

	start = time.Now()
	if err := client.AppsV1().Deployments("density").Delete(context.Background(), "density", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	watcher.waitGone(t, 20*time.Minute)
	f.delete = time.Since(start)
	t.Logf("all pods deleted in %s", f.delete.Round(100*time.Millisecond))
	cpu.read(t, &f)
	return f
}

// cpuMeter reads the processes' CPU from their start.
type cpuMeter struct {
	api                       clusterAPI
	kcm, scheduler, kwok      *component
	serverBase                time.Duration
	kcmBase, schedBase, kBase time.Duration
}

func newCPUMeter(t *testing.T, api clusterAPI, kcm, scheduler, kwok *component) *cpuMeter {
	m := &cpuMeter{api: api, kcm: kcm, scheduler: scheduler, kwok: kwok}
	m.serverBase = m.serverCPU(t)
	m.kcmBase, m.schedBase, m.kBase = pidCPU(t, kcm.cmd.Process.Pid), pidCPU(t, scheduler.cmd.Process.Pid), pidCPU(t, kwok.cmd.Process.Pid)
	return m
}

// serverCPU is the API server's processes' CPU so far; PostgreSQL's backends' is counted from
// the column's start.
func (m *cpuMeter) serverCPU(t *testing.T) time.Duration {
	var total time.Duration
	for _, pid := range m.api.pids {
		total += pidCPU(t, pid)
	}
	return total
}

func (m *cpuMeter) read(t *testing.T, f *clusterFigures) {
	f.serverCPU = m.serverCPU(t) - m.serverBase
	if m.api.cpu != nil {
		f.serverCPU += m.api.cpu()
	}
	for _, pid := range m.api.pids {
		f.serverPeakRSS += processMemory(t, pid)["VmHWM"]
	}
	f.kcmCPU = pidCPU(t, m.kcm.cmd.Process.Pid) - m.kcmBase
	f.schedulerCPU = pidCPU(t, m.scheduler.cmd.Process.Pid) - m.schedBase
	f.kwokCPU = pidCPU(t, m.kwok.cmd.Process.Pid) - m.kBase
}

func pidCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	cpu, err := bench.ProcessCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	return cpu
}

// createNodesConcurrently registers n kwok nodes, 16 at a time.
func createNodesConcurrently(t *testing.T, client kubernetes.Interface, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			node := &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("kwok-%d", i),
					Labels:      nodeLabels(fmt.Sprintf("kwok-%d", i), "bench"),
					Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
				Status: corev1.NodeStatus{Allocatable: nodeResources(), Capacity: nodeResources()},
			}
			if _, err := client.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// waitAllNodes polls the node list until n nodes are Ready and, if untainted, have no taints.
func waitAllNodes(t *testing.T, client kubernetes.Interface, n int, untainted bool, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for poll := time.NewTicker(100 * time.Millisecond); ; <-poll.C {
		list, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		ready := 0
		if err == nil {
			for i := range list.Items {
				node := &list.Items[i]
				if nodeCondition(node, corev1.NodeReady) == corev1.ConditionTrue && (!untainted || len(node.Spec.Taints) == 0) {
					ready++
				}
			}
		}
		if ready == n {
			poll.Stop()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d nodes Ready (untainted: %v) after %s (last error %v)", ready, n, untainted, timeout, err)
		}
	}
}

// createDensityDeployment creates namespace density and its Deployment of pods replicas.
func createDensityDeployment(t *testing.T, client kubernetes.Interface, pods int) {
	t.Helper()
	labels := map[string]string{"app": "density"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "density", Namespace: "density"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(pods)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
	if _, err := client.AppsV1().Deployments("density").Create(context.Background(), dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// podWatcher follows the pods of a namespace with an informer, as the density tests of kube do:
// a pod's startup is from when it was first seen to when it was first seen Ready.
type podWatcher struct {
	mu      sync.Mutex
	seen    map[types.UID]time.Time
	ready   map[types.UID]time.Time
	current int // pods that exist now
	changed chan struct{}
}

func watchPods(t *testing.T, client kubernetes.Interface, ns string) *podWatcher {
	t.Helper()
	if _, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := &podWatcher{seen: map[types.UID]time.Time{}, ready: map[types.UID]time.Time{}, changed: make(chan struct{}, 1)}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	informer := factory.Core().V1().Pods().Informer()
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.observe(obj.(*corev1.Pod), 1) },
		UpdateFunc: func(_, obj any) { w.observe(obj.(*corev1.Pod), 0) },
		DeleteFunc: func(any) { w.observe(nil, -1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	return w
}

func (w *podWatcher) observe(pod *corev1.Pod, delta int) {
	now := time.Now()
	w.mu.Lock()
	w.current += delta
	if pod != nil {
		if _, ok := w.seen[pod.UID]; !ok {
			w.seen[pod.UID] = now
		}
		if _, ok := w.ready[pod.UID]; !ok && pod.Status.Phase == corev1.PodRunning && podReady(pod) {
			w.ready[pod.UID] = now
		}
	}
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// waitFor waits until cond holds on the watcher's state, or fails after timeout.
func (w *podWatcher) waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		w.mu.Lock()
		done, state := cond()
		w.mu.Unlock()
		if done {
			return
		}
		select {
		case <-w.changed:
		case <-deadline:
			t.Fatalf("%s: not so after %s: %s", what, timeout, state)
		}
	}
}

func (w *podWatcher) waitRunning(t *testing.T, n int, timeout time.Duration) {
	w.waitFor(t, fmt.Sprintf("%d pods Running", n), timeout, func() (bool, string) {
		return len(w.ready) >= n, fmt.Sprintf("%d seen, %d Running and Ready", len(w.seen), len(w.ready))
	})
}

func (w *podWatcher) waitGone(t *testing.T, timeout time.Duration) {
	w.waitFor(t, "all pods gone", timeout, func() (bool, string) {
		return w.current == 0, fmt.Sprintf("%d pods left", w.current)
	})
}

// startupPercentiles are the 50th and 99th percentiles of first seen to first seen Ready.
func (w *podWatcher) startupPercentiles() (p50, p99 time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var startups []time.Duration
	for uid, ready := range w.ready {
		startups = append(startups, ready.Sub(w.seen[uid]))
	}
	sort.Slice(startups, func(i, j int) bool { return startups[i] < startups[j] })
	at := func(q float64) time.Duration { return startups[min(len(startups)-1, int(q*float64(len(startups))))] }
	return at(0.50), at(0.99)
}
