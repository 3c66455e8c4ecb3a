package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// The official clients of two other ecosystems, each running a script of the same checks
// (CRUD, conflicts, selectors, pagination, a watch from a list's resourceVersion, custom objects
// with /status, delete-collection) through the server's generated admin kubeconfig. .ci/run
// installs them; elsewhere a missing client skips its test, as PostgreSQL does.

// TestPythonClient: Debian's python3-kubernetes (the official client, which sends watch=True).
func TestPythonClient(t *testing.T) {
	python := "/usr/bin/python3"
	requireClient(t, "the Python client (apt-get install python3-kubernetes)", exec.Command(python, "-c", "import kubernetes"))
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		runClient(t, s, "python-client", python, "testdata/python/client.py")
	})
}

// TestJavaScriptClient: @kubernetes/client-node from npm, informer included.
func TestJavaScriptClient(t *testing.T) {
	requireClient(t, "the JavaScript client (npm ci --prefix e2e/testdata/js)",
		exec.Command("node", "-e", "require.resolve('@kubernetes/client-node')"), "testdata/js")
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		runClient(t, s, "js-client", "node", "testdata/js/client.mjs")
	})
}

// requireClient runs check (in dir, if given): when it fails, the test fails in CI and is
// skipped elsewhere, saying how to install what is missing.
func requireClient(t *testing.T, what string, check *exec.Cmd, dir ...string) {
	t.Helper()
	if len(dir) > 0 {
		check.Dir = dir[0]
	}
	if out, err := check.CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing: %v\n%s", what, err, out)
		}
		t.Skipf("%s is missing: %v", what, err)
	}
}

// runClient runs a client's script against s in a new namespace, with a kubeconfig naming the
// running server.
func runClient(t *testing.T, s *sqlkubeServer, namespace string, command ...string) {
	createNamespace(t, s.clientset(), namespace)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, command[0], append(command[1:], namespace)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.currentKubeconfig(t))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", command, err, out)
	}
}

// currentKubeconfig is the admin kubeconfig with the running process's URL (a restarted server
// listens on another port than the one it wrote).
func (s *sqlkubeServer) currentKubeconfig(t *testing.T) string {
	cfg, err := clientcmd.LoadFromFile(s.kubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, cluster := range cfg.Clusters {
		cluster.Server = s.URL()
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
