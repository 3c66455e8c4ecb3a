package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// startTimeout bounds how long a server may take to listen and report ready (migrations on
	// PostgreSQL included).
	startTimeout = 60 * time.Second
	// stopTimeout bounds a graceful shutdown.
	stopTimeout = 30 * time.Second
)

// listeningAddr finds the address and scheme in the server's "serving" log line; the servers
// listen on port 0 so that parallel runs never collide.
var listeningAddr = regexp.MustCompile(`msg=serving addr=(\S+) scheme=(\S+)`)

// sqlkubeServer is one database served by a sequence of sqlkube processes: stop, kill and
// restart keep the database, so tests can check what survives.
type sqlkubeServer struct {
	t    testing.TB
	dsn  string
	args []string
	log  *syncBuffer // output of every process, in order, shown when the test fails
	proc *process
	// kubectlHome is kubectl's private HOME and cache directory.
	kubectlHome string
	// pkiDir is the server's --cert-dir; its admin kubeconfig is written there too.
	pkiDir string
}

// process is one running sqlkube.
type process struct {
	cmd    *exec.Cmd
	url    string
	exited chan struct{} // closed when the process has exited and its output is drained
	err    error         // Wait's result, set before exited is closed
}

// startServer starts sqlkube on dsn with extra flags and waits until it is ready. The process is
// killed when the test ends, and its output is logged if the test failed.
func startServer(t testing.TB, dsn string, extraArgs ...string) *sqlkubeServer {
	t.Helper()
	s := &sqlkubeServer{t: t, dsn: dsn, args: extraArgs, log: &syncBuffer{}, kubectlHome: t.TempDir(), pkiDir: certDirFor(t, dsn)}
	t.Cleanup(func() {
		s.killIfRunning()
		if t.Failed() {
			t.Logf("sqlkube output:\n%s", s.log.String())
		}
	})
	s.start()
	return s
}

// certDirs are the certificate directories by database: replicas of one database share one, as
// the README tells operators to, so that they share a CA and a ServiceAccount signing key.
var certDirs sync.Map

func certDirFor(t testing.TB, dsn string) string {
	dir, _ := certDirs.LoadOrStore(dsn, t.TempDir())
	return dir.(string)
}

// URL is the base URL of the running process.
func (s *sqlkubeServer) URL() string { return s.proc.url }

func (s *sqlkubeServer) start() {
	s.t.Helper()
	args := append([]string{"--listen=127.0.0.1:0", "--db=" + s.dsn, "--log-level=info",
		"--cert-dir=" + s.pkiDir, "--admin-kubeconfig=" + s.adminKubeconfig()}, s.args...)
	fmt.Fprintf(s.log, "--- sqlkube %v\n", args)
	p, err := launch(serverBinary(s.t), s.log, args)
	if err != nil {
		s.t.Fatalf("starting sqlkube: %v\n%s", err, s.log.String())
	}
	s.proc = p
	if err := p.waitReady(startTimeout); err != nil {
		s.killIfRunning()
		s.t.Fatalf("sqlkube did not become ready: %v\n%s", err, s.log.String())
	}
}

// restart starts a new process on the same database, after stop or kill.
func (s *sqlkubeServer) restart() {
	s.t.Helper()
	if s.proc.running() {
		s.t.Fatal("restart: the previous process is still running")
	}
	s.start()
}

// stop asks the process to shut down gracefully and checks that it exits 0 in time.
func (s *sqlkubeServer) stop() {
	s.t.Helper()
	if err := s.proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-s.proc.exited:
	case <-time.After(stopTimeout):
		s.t.Fatalf("sqlkube did not exit within %s of SIGTERM", stopTimeout)
	}
	if s.proc.err != nil {
		s.t.Fatalf("sqlkube exited with %v after SIGTERM, want exit 0", s.proc.err)
	}
}

// kill ends the process with SIGKILL, as a crash would, and waits until it is gone.
func (s *sqlkubeServer) kill() {
	s.t.Helper()
	if err := s.proc.cmd.Process.Kill(); err != nil {
		s.t.Fatalf("SIGKILL: %v", err)
	}
	<-s.proc.exited
}

func (s *sqlkubeServer) killIfRunning() {
	if s.proc != nil && s.proc.running() {
		_ = s.proc.cmd.Process.Kill()
		<-s.proc.exited
	}
}

// launch starts sqlkube with args, copying its output to log, and returns once it has printed
// the address it listens on.
func launch(binary string, log *syncBuffer, args []string) (*process, error) {
	cmd := exec.Command(binary, args...)
	cmd.Stdout = log
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	url := make(chan string, 1)
	go func() {
		copyLinesFindingURL(stderr, log, url)
		p.err = cmd.Wait()
		close(p.exited)
	}()
	select {
	case p.url = <-url:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("sqlkube exited before listening: %v", p.err)
	case <-time.After(startTimeout):
		_ = cmd.Process.Kill()
		<-p.exited
		return nil, fmt.Errorf("sqlkube did not report its address within %s", startTimeout)
	}
}

// copyLinesFindingURL copies r to log line by line, sending the URL of the first listening
// address seen.
func copyLinesFindingURL(r io.Reader, log io.Writer, url chan<- string) {
	sent := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(log, line)
		if m := listeningAddr.FindStringSubmatch(line); m != nil && !sent {
			url <- m[2] + "://" + m[1]
			sent = true
		}
	}
}

func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// waitReady polls /readyz until it answers 200, the process exits, or timeout passes.
func (p *process) waitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = probeReady(ctx, p.url); last == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("sqlkube exited: %v", p.err)
		case <-ctx.Done():
			return fmt.Errorf("not ready after %s: %w", timeout, last)
		case <-tick.C:
		}
	}
}

// probeClient asks whether a server is ready as a load balancer would: anonymously, over TLS
// without checking whose certificate it is.
var probeClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}

func probeReady(ctx context.Context, baseURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz answered %d: %s", resp.StatusCode, body)
	}
	return nil
}

// runToExit runs sqlkube with args and env (added to the test's environment) until it exits,
// for the start-up failures that must end the process. It returns the exit code and output.
func runToExit(t testing.TB, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Env = append(cmd.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &exitErr) && ctx.Err() == nil:
		return exitErr.ExitCode(), string(out)
	default:
		t.Fatalf("running sqlkube %v: %v\n%s", args, err, out)
		return -1, ""
	}
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a process's two output streams.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
