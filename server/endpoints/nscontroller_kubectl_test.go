package endpoints_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sqlkube/sqlkube/server/controllers/controllertest"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// kubectl runs kubectl against the test server, with a private KUBECONFIG, HOME and discovery
// cache, and fails the test if it fails. It returns stdout.
func (a *testAPI) kubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		sqltest.Missing(t, "kubectl is not on the PATH: "+err.Error())
	}
	home := t.TempDir()
	cmd := exec.CommandContext(t.Context(), path, append([]string{"--server", a.http.URL, "--cache-dir", filepath.Join(home, "cache"), "--request-timeout", "30s"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(home, "config"), "HOME="+home)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

func wantOutput(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("kubectl printed %q, want %q", got, want)
	}
}

func TestKubectlDeleteNamespaceWithContent(t *testing.T) {
	api := sqliteAPI(t)
	c := newClients(t, api)
	api.kubectl(t, "", "create", "namespace", "demo")
	api.kubectl(t, "", "create", "configmap", "a", "-n", "demo")
	api.kubectl(t, "", "create", "secret", "generic", "s", "-n", "demo")
	// kubectl waits until the namespace is gone.
	wantOutput(t, api.kubectl(t, "", "delete", "namespace", "demo", "--timeout=20s"), "namespace \"demo\" deleted\n")
	waitGone(t, "namespace demo", func() error {
		_, err := c.core.CoreV1().Namespaces().Get(t.Context(), "demo", metav1.GetOptions{})
		return err
	})
}

func TestKubectlDeleteCascade(t *testing.T) {
	api := sqliteAPI(t)
	withDependent := func(t *testing.T) {
		api.kubectl(t, "", "create", "configmap", "owner")
		uid := api.kubectl(t, "", "get", "configmap", "owner", "-o", "jsonpath={.metadata.uid}")
		api.kubectl(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dependent","ownerReferences":[
			{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":"`+uid+`","blockOwnerDeletion":true}]}}`, "create", "-f", "-")
	}
	listed := func(t *testing.T) string {
		return api.kubectl(t, "", "get", "configmaps", "-o", `jsonpath={range .items[*]}{.metadata.name}:{.metadata.ownerReferences[*].name} {end}`)
	}

	t.Run("orphan", func(t *testing.T) {
		withDependent(t)
		wantOutput(t, api.kubectl(t, "", "delete", "configmap", "owner", "--cascade=orphan", "--timeout=20s"), "configmap \"owner\" deleted\n")
		wantOutput(t, listed(t), "dependent: ")
		api.kubectl(t, "", "delete", "configmap", "dependent")
	})
	t.Run("foreground", func(t *testing.T) {
		withDependent(t)
		wantOutput(t, api.kubectl(t, "", "delete", "configmap", "owner", "--cascade=foreground", "--timeout=20s"), "configmap \"owner\" deleted\n")
		wantOutput(t, listed(t), "")
	})
	t.Run("background", func(t *testing.T) {
		withDependent(t)
		wantOutput(t, api.kubectl(t, "", "delete", "configmap", "owner", "--timeout=20s"), "configmap \"owner\" deleted\n")
		controllertest.Eventually(t, "the dependent is deleted", func() bool { return listed(t) == "" })
	})
}
