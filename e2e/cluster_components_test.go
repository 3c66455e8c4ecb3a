package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sqlkube/sqlkube/server/pki"
)

// A cluster on an API server (issue 47): the real kube-controller-manager and kube-scheduler
// (v1.37.2, built from the k8s.io/kubernetes module pinned in e2e/kuberef/kubecluster) and kwok
// (simulated kubelets, e2e/kuberef/kwok) with the stages in cluster/kwok-stages.yaml. make
// cluster-binaries builds them and the make targets that need them pass them in these variables.
const (
	controllerManagerEnv = "SQLKUBE_KUBE_CONTROLLER_MANAGER"
	schedulerEnv         = "SQLKUBE_KUBE_SCHEDULER"
	kwokEnv              = "SQLKUBE_KWOK"
	// kwokStages is kwok's configuration, relative to this package's directory.
	kwokStages = "cluster/kwok-stages.yaml"
)

// clusterBinaries are the components' binaries.
type clusterBinaries struct{ controllerManager, scheduler, kwok string }

// clusterBinariesOrSkip reads the binaries from the environment; a test that needs them skips
// without them (make test; make cluster runs them).
func clusterBinariesOrSkip(t *testing.T) clusterBinaries {
	t.Helper()
	b := clusterBinaries{os.Getenv(controllerManagerEnv), os.Getenv(schedulerEnv), os.Getenv(kwokEnv)}
	if b.controllerManager == "" || b.scheduler == "" || b.kwok == "" {
		t.Skipf("%s, %s and %s name the cluster's components (make cluster builds them)", controllerManagerEnv, schedulerEnv, kwokEnv)
	}
	return b
}

// clusterArgs are the flags sqlkube runs a cluster's control plane with: its own controllers left
// to kube-controller-manager ('-*': none), and kubelets authorized as kube-apiserver authorizes
// them (Node authorizer and NodeRestriction admission).
var clusterArgs = []string{"--controllers=-*", "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction"}

// clusterAPI is an API server a cluster runs on, sqlkube or kube-apiserver.
type clusterAPI struct {
	name string
	url  string
	// admin is a kubeconfig in system:masters.
	admin string
	// kubeconfigs are the components' kubeconfigs by user (system:kube-controller-manager,
	// system:kube-scheduler).
	kubeconfigs map[string]string
	// caFile and saKey are the cluster CA and the ServiceAccount signing key
	// (kube-controller-manager's --root-ca-file and --service-account-private-key-file).
	caFile, saKey string
	// pids are the server's processes (kube-apiserver's and etcd's), for their CPU and memory;
	// cpu adds what else serves it (PostgreSQL's backends), if set.
	pids []int
	cpu  func() time.Duration
	// profile saves a CPU profile of the server over seconds, if set (sqlkube's /debug/pprof).
	profile func(seconds int) error
}

// clusterAPIOf is the cluster view of a sqlkube started with clusterArgs: the components'
// kubeconfigs are minted by sqlkube kubeconfig as an operator mints them.
func (s *sqlkubeServer) clusterAPIOf(t *testing.T, name string) clusterAPI {
	t.Helper()
	kubeconfigs := map[string]string{}
	for _, user := range []string{"system:kube-controller-manager", "system:kube-scheduler"} {
		kubeconfigs[user] = s.userKubeconfig(t, user)
	}
	return clusterAPI{name: name, url: s.URL(), admin: s.kubeconfigPath(), kubeconfigs: kubeconfigs,
		caFile: filepath.Join(s.pkiDir, pki.CACertFile), saKey: filepath.Join(s.pkiDir, "sa.key"), pids: []int{s.proc.cmd.Process.Pid}}
}

// clientset is the admin's client of api, unthrottled.
func (api clusterAPI) clientset(t testing.TB) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags(api.url, api.admin)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS = -1
	return kubernetes.NewForConfigOrDie(cfg)
}

// component is one running process of the cluster, its output in a file.
type component struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startComponent starts bin; it is killed when the test ends, its log's end shown if it failed.
func startComponent(t *testing.T, name, bin string, args ...string) *component {
	t.Helper()
	c := &component{name: name, cmd: exec.Command(bin, args...), log: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{})}
	out, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stdout, c.cmd.Stderr = out, out
	// A killed test runs no cleanup: the component dies with it rather than run on.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() { _ = c.cmd.Wait(); out.Close(); close(c.done) }()
	t.Cleanup(func() {
		c.kill()
		if t.Failed() {
			t.Logf("%s: the end of its log:\n%s", name, tailOf(c.log, 4000))
		}
	})
	return c
}

// kill ends the process as a crash or a powered-off machine would, and waits until it is gone.
func (c *component) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

// exited reports whether the process ended (a component that exits on its own failed).
func (c *component) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func tailOf(path string, n int) string {
	data, _ := os.ReadFile(path)
	return string(data[max(0, len(data)-n):])
}

// clusterOptions tune the components for a test or for the density benchmark.
type clusterOptions struct {
	// qps and burst are kube-controller-manager's and kube-scheduler's client rate limits.
	qps, burst int
	// leaseSeconds is the kubelets' (kwok's) node lease duration; kwok renews a lease every
	// quarter of it. gracePeriod is how long kube-controller-manager waits for a renewal before
	// it marks the node Unknown.
	leaseSeconds int
	gracePeriod  time.Duration
}

// startControlPlane starts kube-controller-manager and kube-scheduler on api, each under its
// own identity; kube-controller-manager runs each controller as its ServiceAccount in
// kube-system (--use-service-account-credentials), as kubeadm runs it.
func startControlPlane(t *testing.T, bins clusterBinaries, api clusterAPI, opt clusterOptions) (kcm, scheduler *component) {
	t.Helper()
	limits := []string{"--kube-api-qps=" + strconv.Itoa(opt.qps), "--kube-api-burst=" + strconv.Itoa(opt.burst)}
	// No serving port (nothing scrapes them here) and no leader election (one of each).
	common := []string{"--secure-port=0", "--leader-elect=false", "--v=1"}
	kcmArgs := append([]string{
		"--kubeconfig=" + api.kubeconfigs["system:kube-controller-manager"],
		"--use-service-account-credentials=true",
		"--root-ca-file=" + api.caFile,
		"--service-account-private-key-file=" + api.saKey,
		"--node-monitor-period=2s",
		"--node-monitor-grace-period=" + opt.gracePeriod.String(),
	}, append(common, limits...)...)
	kcm = startComponent(t, "kube-controller-manager", bins.controllerManager, kcmArgs...)
	scheduler = startComponent(t, "kube-scheduler", bins.scheduler,
		append([]string{"--kubeconfig=" + api.kubeconfigs["system:kube-scheduler"]}, append(common, limits...)...)...)
	return kcm, scheduler
}

// startKwok starts kwok as the kubelets of the nodes labelled kwokGroupLabel=group. It runs as the
// admin: one kwok process speaks for many nodes with one client, so it cannot be each node's
// system:node:NAME identity.
func startKwok(t *testing.T, bins clusterBinaries, api clusterAPI, group string, opt clusterOptions) *component {
	t.Helper()
	stages, err := filepath.Abs(kwokStages)
	if err != nil {
		t.Fatal(err)
	}
	return startComponent(t, "kwok-"+group, bins.kwok,
		"--kubeconfig="+api.admin, "--config="+stages,
		"--manage-all-nodes=false", "--manage-nodes-with-label-selector="+kwokGroupLabel+"="+group,
		"--node-lease-duration-seconds="+strconv.Itoa(opt.leaseSeconds),
		// Pod IPs are handed out from this range, node by node.
		"--cidr=10.244.0.0/16", "--node-ip=10.96.0.1")
}

// kwokGroupLabel says which kwok process is a node's kubelet.
const kwokGroupLabel = "sqlkube.io/kwok-group"

// createNodes registers n nodes named PREFIX-I in the kwok group, as kubelets register
// themselves: the node object first, its status then kwok's.
func createNodes(t *testing.T, client kubernetes.Interface, group, prefix string, n int) []string {
	t.Helper()
	var names []string
	for i := range n {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i),
				Labels:      nodeLabels(fmt.Sprintf("%s-%d", prefix, i), group),
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
			Status: corev1.NodeStatus{Allocatable: nodeResources(), Capacity: nodeResources()},
		}
		if _, err := client.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, node.Name)
	}
	return names
}

// nodeLabels are those a kubelet registers its node with (the scheduler's topology spread needs
// the hostname), and the kwok group.
func nodeLabels(name, group string) map[string]string {
	return map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64", kwokGroupLabel: group}
}

func nodeResources() corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
}
