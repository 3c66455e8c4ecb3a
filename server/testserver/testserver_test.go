package testserver_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/server/controllers/controllertest"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/sqlkube/sqlkube/server/testserver"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

var ctx = context.Background()

func clientset(t *testing.T, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestStart: on each backend the admin may do anything, its kubeconfig file reaches the same
// server, and a minted user is held to RBAC: forbidden with kube's message until bound to a role.
func TestStart(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		srv := testserver.Start(t, testserver.WithDatabase(dsn))
		admin := clientset(t, srv.Config)
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		fromFile, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := clientset(t, fromFile).CoreV1().Namespaces().Get(ctx, "demo", metav1.GetOptions{}); err != nil {
			t.Errorf("the admin kubeconfig file: %v", err)
		}

		aliceConfig, err := srv.ConfigFor("alice", "developers")
		if err != nil {
			t.Fatal(err)
		}
		alice := clientset(t, aliceConfig)
		_, err = alice.CoreV1().ConfigMaps("demo").List(ctx, metav1.ListOptions{})
		const want = `configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "demo"`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Fatalf("alice lists configmaps before any binding: %v, want 403 %q", err, want)
		}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "developers"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "developers"}}}
		if _, err := admin.RbacV1().RoleBindings("demo").Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		controllertest.Eventually(t, "alice may list configmaps in demo through her group", func() bool {
			_, err := alice.CoreV1().ConfigMaps("demo").List(ctx, metav1.ListOptions{})
			return err == nil
		})
	})
}

// TestEditMayRunWorkloads: a user bound to kube's edit role in a namespace may create pods,
// deployments, jobs and services there, as on kube-apiserver (edit aggregates kube's
// system:aggregate-to-edit and -view), and nothing in another namespace.
func TestEditMayRunWorkloads(t *testing.T) {
	srv := testserver.Start(t)
	admin := clientset(t, srv.Config)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "editors"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}}}
	if _, err := admin.RbacV1().RoleBindings("team").Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bobConfig, err := srv.ConfigFor("bob")
	if err != nil {
		t.Fatal(err)
	}
	bob := clientset(t, bobConfig)
	labels := map[string]string{"app": "web"}
	podSpec := corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}
	// The binding reaches the authorizer, and edit its aggregated rules, after the create.
	controllertest.Eventually(t, "bob may create a pod in team", func() bool {
		_, err := bob.CoreV1().Pods("team").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: podSpec}, metav1.CreateOptions{})
		return err == nil
	})
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec}}}
	if _, err := bob.AppsV1().Deployments("team").Create(ctx, deployment, metav1.CreateOptions{}); err != nil {
		t.Errorf("bob creates a deployment: %v", err)
	}
	service := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Selector: labels,
		Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := bob.CoreV1().Services("team").Create(ctx, service, metav1.CreateOptions{}); err != nil {
		t.Errorf("bob creates a service: %v", err)
	}
	if _, err := bob.BatchV1().Jobs("team").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("bob lists jobs: %v", err)
	}
	if _, err := bob.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("bob lists pods in default: %v, want 403", err)
	}
}

// TestNodeAuthorization: with --authorization-mode=Node,RBAC, a kubelet (system:node:NAME in
// system:nodes) reads the Secret a pod bound to its node mounts, and is refused, with kube's
// reason, the Secret of a pod on another node; it may update its Node (which other Nodes it may
// not is NodeRestriction admission's to say).
func TestNodeAuthorization(t *testing.T) {
	srv := testserver.Start(t, testserver.WithFlags("--authorization-mode=Node,RBAC"))
	admin := clientset(t, srv.Config)
	controllertest.Eventually(t, "the default ServiceAccount", func() bool {
		_, err := admin.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	for _, node := range []string{"n1", "n2"} {
		if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secret-" + node}, StringData: map[string]string{"k": "v"}}
		if _, err := admin.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-" + node}, Spec: corev1.PodSpec{NodeName: node,
			Containers: []corev1.Container{{Name: "c", Image: "nginx"}},
			Volumes:    []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "secret-" + node}}}}}}
		if _, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	kubeletConfig, err := srv.ConfigFor("system:node:n1", "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	kubelet := clientset(t, kubeletConfig)
	// The pod reaches the authorizer's graph through its informers, after the create.
	controllertest.Eventually(t, "n1's kubelet reads its pod's Secret", func() bool {
		_, err := kubelet.CoreV1().Secrets("default").Get(ctx, "secret-n1", metav1.GetOptions{})
		return err == nil
	})
	_, err = kubelet.CoreV1().Secrets("default").Get(ctx, "secret-n2", metav1.GetOptions{})
	if want := `secrets "secret-n2" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the namespace "default": node: no relationship found between node 'n1' and this object`; err == nil || err.Error() != want {
		t.Errorf("n1's kubelet reads n2's pod's Secret: %v, want %s", err, want)
	}
	if _, err := kubelet.CoreV1().Nodes().Patch(ctx, "n1", types.MergePatchType, []byte(`{"metadata":{"labels":{"seen":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("n1's kubelet patches its node: %v", err)
	}
}

// TestWithFlags: flags reach the server as on sqlkube's command line.
func TestWithFlags(t *testing.T) {
	srv := testserver.Start(t, testserver.WithFlags("--authorization-mode=AlwaysAllow"))
	cfg, err := srv.ConfigFor("nobody")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clientset(t, cfg).CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("AlwaysAllow lets anyone list secrets: %v", err)
	}
}

// TestNewAndStop: a server New started stops when asked, its files are removed, and it answers
// no more.
func TestNewAndStop(t *testing.T) {
	srv, err := testserver.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(srv.Kubeconfig)
	if _, err := clientset(t, srv.Config).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatalf("Stop again: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the server's directory %s is left: %v", dir, err)
	}
	if _, err := clientset(t, srv.Config).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err == nil {
		t.Error("a stopped server still answers")
	}
}

// TestBadFlags: a flag the server refuses fails the start with the server's words.
func TestBadFlags(t *testing.T) {
	_, err := testserver.New(ctx, testserver.WithFlags("--authorization-mode=Nope"))
	const want = `--authorization-mode: unknown authorization mode "Nope" (known: AlwaysAllow, AlwaysDeny, Node, RBAC)`
	if err == nil || err.Error() != want {
		t.Fatalf("New with a bad flag: %v, want %q", err, want)
	}
}

// TestStartupTime measures starts to readiness (/readyz answers 200) on an empty SQLite file,
// the figures the README gives: the process's first start (which initialises kube's libraries)
// and the next ones. It fails only when a start takes seconds, as envtest's does.
func TestStartupTime(t *testing.T) {
	const starts = 10
	var first, total, worst time.Duration
	for i := range starts {
		began := time.Now()
		srv := testserver.Start(t)
		took := time.Since(began)
		if err := srv.Stop(); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = took
			continue
		}
		total += took
		worst = max(worst, took)
	}
	t.Logf("start to ready on SQLite: first %s; then mean %s, worst %s over %d starts", first, total/(starts-1), worst, starts-1)
	if worst > 2*time.Second {
		t.Errorf("a start took %s", worst)
	}
}

// TestKlogGoesToTheServersLog: the klog lines of Kubernetes' libraries go to the server's log,
// not to the test's output.
func TestKlogGoesToTheServersLog(t *testing.T) {
	var log strings.Builder
	var mu sync.Mutex
	testserver.Start(t, testserver.WithLogger(slog.New(slog.NewTextHandler(lockedWriter{&mu, &log}, nil))))
	klog.InfoS("a line through klog")
	klog.Flush()
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(log.String(), "a line through klog") {
		t.Errorf("klog's line is not in the server's log:\n%s", log.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
