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
	code, _, stderr := runCLI(t, "--help")
	if code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"--listen", "--db", "--log-level", "--db-max-conns", "--retention", "--retention-min-revisions",
		"--compaction-interval", "--watch-bookmark-interval", "SQLKUBE_DB_MAX_CONNS", "sqlkube version",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("help does not mention %s:\n%s", want, stderr)
		}
	}
}

func TestVersion(t *testing.T) {
	code, stdout, _ := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(stdout, "sqlkube dev (go") {
		t.Fatalf("exit %d, stdout %q", code, stdout)
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
