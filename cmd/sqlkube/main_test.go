package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
)

// runCLI runs the program in-process and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, nil, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestHelpExplainsEveryFlagAndVariable(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 || stderr != "" {
			t.Fatalf("%v: exit code %d, stderr:\n%s", args, code, stderr)
		}
		for _, want := range []string{
			"--listen", "--db", "--log-level", "--db-max-conns", "--retention", "--retention-min-revisions",
			"--compaction-interval", "--watch-bookmark-interval", "--max-requests-inflight", "--request-timeout",
			"--min-request-timeout int", "(default 1800)", "--shutdown-delay-duration", "--profiling",
			"SQLKUBE_DB_MAX_CONNS", "sqlkube version",
		} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%v: help does not mention %s:\n%s", args, want, stdout)
			}
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, stdout, _ := runCLI(t, args...)
		if code != 0 || !strings.HasPrefix(stdout, "sqlkube dev (go") {
			t.Fatalf("%v: exit %d, stdout %q", args, code, stdout)
		}
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{{"frobnicate"}, {"--no-such-flag"}, {"version", "extra"}} {
		if code, _, stderr := runCLI(t, args...); code != 2 || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message", args, code, stderr)
		}
	}
}

func TestTakenPortFailsBeforeOpeningTheDatabase(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dsn := "sqlite://" + t.TempDir() + "/never-created.db"
	code, _, stderr := runCLI(t, "--listen", ln.Addr().String(), "--db", dsn)
	if code != 1 || !strings.Contains(stderr, "listen on "+ln.Addr().String()) || !strings.Contains(stderr, "address already in use") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}

func TestBenchIsWired(t *testing.T) {
	code, stdout, stderr := runCLI(t, "bench", "--help")
	if code != 0 || !strings.Contains(stdout+stderr, "--server") {
		t.Fatalf("exit %d, output:\n%s%s", code, stdout, stderr)
	}
}

// Started as kube-apiserver (envtest's KUBEBUILDER_ASSETS link), the binary has no subcommands,
// as kube-apiserver has none, and lists kube-apiserver's flags in --help, where envtest looks
// for them.
func TestStartedAsKubeAPIServer(t *testing.T) {
	var out, errOut bytes.Buffer
	kube := program("/assets/kube-apiserver")
	if code := kube(context.Background(), []string{"version"}, nil, &out, &errOut); code != 2 ||
		!strings.HasPrefix(errOut.String(), `kube-apiserver: unexpected argument "version"`) {
		t.Errorf("kube-apiserver version: exit code %d, stderr %q", code, errOut.String())
	}
	out.Reset()
	if code := kube(context.Background(), []string{"--help"}, nil, &out, &errOut); code != 0 ||
		!strings.Contains(out.String(), "--secure-port") || !strings.Contains(out.String(), "--etcd-servers") {
		t.Errorf("kube-apiserver --help: exit code %d, output:\n%s", code, out.String())
	}
	out.Reset()
	if code := program("/usr/bin/sqlkube")(context.Background(), []string{"version"}, nil, &out, &errOut); code != 0 {
		t.Errorf("sqlkube version: exit code %d", code)
	}
}
