package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// helmCommand is the helm the test builds with `go install`, beside the sqlkube binary, so that
// a machine with Go needs no helm installed; helm stays out of go.mod (a module installed at a
// version is built with its own requirements) and out of the sqlkube binary.
const helmCommand = "helm.sh/helm/v4/cmd/helm@v4.3.1"

var buildHelm = sync.OnceValues(func() (string, error) {
	dir := filepath.Join(filepath.Dir(binaryPath), "helm-bin")
	cmd := exec.Command("go", "install", helmCommand)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install %s: %v\n%s", helmCommand, err, out)
	}
	return filepath.Join(dir, "helm"), nil
})

// helmRunner runs helm against one server, with its own configuration and cache directories.
type helmRunner struct {
	s    *sqlkubeServer
	path string
	home string
}

func newHelm(t *testing.T, s *sqlkubeServer) *helmRunner {
	t.Helper()
	path, err := buildHelm()
	if err != nil {
		t.Fatal(err)
	}
	return &helmRunner{s: s, path: path, home: t.TempDir()}
}

// must runs helm with args in dir and returns its output, failing the test if helm fails.
func (h *helmRunner) must(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(h.path, append(args, "--kubeconfig", h.s.kubeconfigPath(), "--kube-apiserver", h.s.URL())...)
	cmd.Dir = h.home
	cmd.Env = append(os.Environ(), "HOME="+h.home, "XDG_CACHE_HOME="+h.home+"/cache",
		"XDG_CONFIG_HOME="+h.home+"/config", "XDG_DATA_HOME="+h.home+"/data")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

// TestHelm: a chart made by `helm create` installs, upgrades (more replicas, an Ingress),
// rolls back and uninstalls, with helm's release history kept in Secrets as on a cluster.
func TestHelm(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		helm := newHelm(t, s)
		helm.must(t, "create", "web")
		apps := s.clientset().AppsV1().Deployments("shop")
		replicas := func() int32 {
			t.Helper()
			d, err := apps.Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return *d.Spec.Replicas
		}
		ingresses := s.clientset().NetworkingV1().Ingresses("shop")

		helm.must(t, "install", "web", "./web", "-n", "shop", "--create-namespace")
		if got := replicas(); got != 1 {
			t.Errorf("installed: %d replicas, want the chart's 1", got)
		}
		expectOutput(t, s.mustKubectl(t, "", "-n", "shop", "get", "service/web", "serviceaccount/web", "secret/sh.helm.release.v1.web.v1", "-o", "name"),
			"service/web\nserviceaccount/web\nsecret/sh.helm.release.v1.web.v1")

		helm.must(t, "upgrade", "web", "./web", "-n", "shop", "--set", "replicaCount=3", "--set", "ingress.enabled=true")
		if got := replicas(); got != 3 {
			t.Errorf("upgraded: %d replicas, want 3", got)
		}
		if _, err := ingresses.Get(ctx, "web", metav1.GetOptions{}); err != nil {
			t.Errorf("upgraded with an ingress: %v", err)
		}

		helm.must(t, "rollback", "web", "1", "-n", "shop")
		if got := replicas(); got != 1 {
			t.Errorf("rolled back: %d replicas, want 1", got)
		}
		if _, err := ingresses.Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("rolled back to a revision without the ingress: %v, want 404", err)
		}
		var history []struct {
			Revision int    `json:"revision"`
			Status   string `json:"status"`
		}
		if err := json.Unmarshal([]byte(helm.must(t, "history", "web", "-n", "shop", "-o", "json")), &history); err != nil {
			t.Fatal(err)
		}
		if len(history) != 3 || history[2].Revision != 3 || history[2].Status != "deployed" || history[0].Status != "superseded" {
			t.Errorf("helm history: %+v, want 3 revisions, the last deployed", history)
		}

		helm.must(t, "uninstall", "web", "-n", "shop")
		eventually(t, 30*time.Second, "the chart's Deployment is gone", func() (bool, error) {
			_, err := apps.Get(ctx, "web", metav1.GetOptions{})
			return apierrors.IsNotFound(err), err
		})
		if _, err := s.clientset().CoreV1().Services("shop").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the chart's Service after uninstall: %v, want 404", err)
		}
	})
}
