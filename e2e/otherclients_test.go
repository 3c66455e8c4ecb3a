package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// The official clients of two other ecosystems, each running a script of the same checks (CRUD,
// a 409 on a stale update, label and field selectors, pagination, the exact events of a watch
// from a list's resourceVersion, an informer, a CRD and its custom objects with /status,
// delete-collection) through the admin kubeconfig the server generated (TLS, client certificate
// and CA embedded). .ci/run installs both; elsewhere a missing client skips its test with how to
// install it, as a missing PostgreSQL does, and CI=true makes that a failure.

// clientScriptTimeout bounds one script run; a run takes a few seconds.
const clientScriptTimeout = 60 * time.Second

// TestPythonClient: Debian's python3-kubernetes (the official client, which sends watch=True),
// for /usr/bin/python3 and not whatever python3 is first on the PATH.
func TestPythonClient(t *testing.T) {
	const python = "/usr/bin/python3"
	requireClient(t, "the Python client", "apt-get install -y python3-kubernetes",
		exec.Command(python, "-c", "import kubernetes"))
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		runClient(t, s, "python-client", python, "clients/python/client.py")
	})
}

// TestJavaScriptClient: @kubernetes/client-node 1.x from npm (e2e/clients/js/package-lock.json),
// informer included. Without node_modules it runs npm ci there first.
func TestJavaScriptClient(t *testing.T) {
	const dir = "clients/js"
	const install = "npm ci --prefix e2e/clients/js (Node 20 or newer)"
	requireClient(t, "Node.js", install, exec.Command("node", "--version"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); os.IsNotExist(err) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		requireClient(t, "the JavaScript client", install,
			exec.CommandContext(ctx, "npm", "ci", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error"))
	}
	check := exec.Command("node", "-e", "require.resolve('@kubernetes/client-node')")
	check.Dir = dir
	requireClient(t, "the JavaScript client", install, check)
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		runClient(t, s, "js-client", "node", "clients/js/client.mjs")
	})
}

// requireClient runs check: when it fails, the test fails in CI and is skipped otherwise,
// saying how to install what is missing.
func requireClient(t *testing.T, what, install string, check *exec.Cmd) {
	t.Helper()
	out, err := check.CombinedOutput()
	if err == nil {
		return
	}
	sqltest.Missing(t, what+" is missing ("+err.Error()+"; "+strings.TrimSpace(string(out))+"); install it with: "+install)
}

// runClient runs a client's script against s with KUBECONFIG naming the server's generated admin
// kubeconfig, as written, and a new namespace as its argument. The script's output is logged.
func runClient(t *testing.T, s *sqlkubeServer, namespace string, command ...string) {
	createNamespace(t, s.clientset(), namespace)
	ctx, cancel := context.WithTimeout(ctx, clientScriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, command[0], append(command[1:], namespace)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfigPath())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v did not finish within %s:\n%s", command, clientScriptTimeout, out.String())
	}
	if err != nil {
		t.Fatalf("%v: %v\n%s", command, err, out.String())
	}
	t.Logf("%v passed in %s:\n%s", command, time.Since(start).Round(time.Millisecond), out.String())
}
