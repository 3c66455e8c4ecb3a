package e2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestREADMEQuickStart pastes README's "Try it with kubectl" block into bash as one block, as a
// new user would, then stops the server as README says (kill %1). It runs in a copy of the
// sources the binary is built from (so the database, PKI and kubeconfig it leaves are not the
// checkout's), on a free port (make run's LISTEN), with kubectl from the PATH.
func TestREADMEQuickStart(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatalf("kubectl is needed for this test: %v", err)
	}
	block := readmeBlock(t, "## Try it with kubectl")
	dir := copySources(t)
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", block+"\nkill %1\nwait || true\n")
	cmd.Dir = dir
	// kubectl's cache in a HOME of its own; Go's module and build caches the usual ones, so that
	// make run compiles nothing the tests' build did not.
	cmd.Env = append(os.Environ(), "LISTEN=127.0.0.1:"+strconv.Itoa(port), "HOME="+t.TempDir())
	cmd.Env = append(cmd.Env, goCaches(t)...)
	// Its own process group, so that a failure ends the server it started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the quick start failed: %v\n%s", err, out)
	}
	for _, want := range []string{"namespace/demo created", "configmap/settings created", "color: blue"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the quick start's output lacks %q:\n%s", want, out)
		}
	}
	if conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
		conn.Close()
		t.Errorf("the server still listens after kill %%1")
	}
}

// readmeBlock is the first indented code block after heading in README.md, unindented.
func readmeBlock(t *testing.T, heading string) string {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README has no %q", heading)
	}
	var block []string
	for line := range strings.Lines(section) {
		code, isCode := strings.CutPrefix(line, "    ")
		if !isCode && len(block) > 0 && strings.TrimSpace(line) != "" {
			break
		}
		if isCode {
			block = append(block, code)
		}
	}
	if len(block) == 0 {
		t.Fatalf("README's %q has no code block", heading)
	}
	return strings.Join(block, "")
}

// copySources copies the Makefile and the files the binary is built from into a new directory.
func copySources(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, path := range append(binarySources(t), "Makefile") {
		data, err := os.ReadFile(filepath.Join("..", path))
		if err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// goCaches are the go command's module and build cache settings, as VAR=value.
func goCaches(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	dirs := strings.Fields(string(out))
	if len(dirs) != 2 {
		t.Fatalf("go env printed %q", out)
	}
	return []string{"GOMODCACHE=" + dirs[0], "GOCACHE=" + dirs[1]}
}

// freePort is a TCP port on 127.0.0.1 that nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
