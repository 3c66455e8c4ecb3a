package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// binaryPath is where the sqlkube binary under test is built, in a directory TestMain removes at
// the end. It exists once binary (or startServer) has been called.
var binaryPath string

// build builds the binary once, on first use, so that tests that need none (the compose file
// checks) run without it. It is built as make build builds it (static, -trimpath), so that
// README's make run in another directory (TestREADMEQuickStart) finds every package compiled.
var build = sync.OnceValue(func() error {
	cmd := exec.Command("go", "build", "-trimpath", "-o", binaryPath, "github.com/sqlkube/sqlkube/cmd/sqlkube")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building sqlkube: %v\n%s", err, out)
	}
	return nil
})

// binary builds the sqlkube binary if needed and returns its path.
func binary(t testing.TB) string {
	t.Helper()
	if err := build(); err != nil {
		t.Fatal(err)
	}
	return binaryPath
}

// serverBinary is the binary the servers run: the one under test, or SQLKUBE_E2E_SERVER_BINARY
// (another build, for before-and-after measurements in one sitting); clients (the load tool,
// kubeconfig) always run the one under test.
func serverBinary(t testing.TB) string {
	t.Helper()
	under := binary(t)
	if other := os.Getenv("SQLKUBE_E2E_SERVER_BINARY"); other != "" {
		return other
	}
	return under
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sqlkube-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	binaryPath = filepath.Join(dir, "sqlkube")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
