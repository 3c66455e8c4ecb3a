package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestServerCPUPerRequest is issue 33's measurement of the server's CPU per get and per create,
// run on demand only:
//
//	SQLKUBE_CPU_PER_REQUEST=1 go test ./e2e -run TestServerCPUPerRequest -v
//
// On each backend it starts sqlkube in the production configuration (as TestBenchTable, with
// its ordinary user and 1,000 RoleBindings), or with SQLKUBE_CPU_PLAIN=1 in --plain-http, and
// runs gets and creates of 1 KiB custom resources from 64 clients, a fixed number of each,
// SQLKUBE_CPU_ROUNDS times (default 2), logging the server's CPU per operation from /proc;
// SQLKUBE_CPU_LIST=1 adds full lists of 10,000 from one client, the table's list figure, and
// SQLKUBE_CPU_WATCH=1 the table's watch figure (1,000 watchers, 10 writes/s; its operations are
// the events delivered, and its CPU includes the writes'). With
// SQLKUBE_CPU_PROFILE_DIR=DIR, the first round also saves a CPU profile of each operation
// (/debug/pprof/profile) there. SQLKUBE_E2E_SERVER_BINARY runs another build's server, for
// before-and-after figures in one sitting.
func TestServerCPUPerRequest(t *testing.T) {
	if os.Getenv("SQLKUBE_CPU_PER_REQUEST") == "" {
		t.Skip("a benchmark: set SQLKUBE_CPU_PER_REQUEST=1")
	}
	plain, lists, watches := os.Getenv("SQLKUBE_CPU_PLAIN") != "", os.Getenv("SQLKUBE_CPU_LIST") != "", os.Getenv("SQLKUBE_CPU_WATCH") != ""
	mode, args := "plain-http", []string{plainHTTP}
	if !plain {
		mode, args = "production", productionArgs(t)
	}
	rounds := 2
	if n, err := strconv.Atoi(os.Getenv("SQLKUBE_CPU_ROUNDS")); err == nil {
		rounds = n
	}
	forEachServerWith(t, args, func(t *testing.T, s *sqlkubeServer) {
		user := s.kubeconfigPath()
		if !plain {
			user = s.benchUser(t)
		}
		bench := func(args ...string) benchReport {
			return runBenchAs(t, s, user, append([]string{"--resource", benchResource, "--create-crd"}, args...)...)
		}
		bench("--namespace", "gets", "--op", "get", "--objects", "1000", "--count", "2000") // the working set
		ops := []cpuOp{
			{"get", "gets", []string{"--objects", "1000", "--count", "20000", "--concurrency", "64"}},
			{"create", "creates-%d", []string{"--count", "6000", "--concurrency", "64"}},
		}
		if lists {
			// 9,999 of the list's 10,000 objects, made beforehand: the load tool's own working set
			// (the last one) is made within the profile's time.
			bench("--namespace", "lists", "--op", "create", "--count", "9999", "--concurrency", "64")
			ops = append(ops, cpuOp{"list", "lists", []string{"--objects", "1", "--count", "40", "--page-size", "10000"}})
		}
		if watches {
			ops = append(ops, cpuOp{"watch", "watch-%d", []string{"--watchers", "1000", "--rate", "10", "--duration", "10s"}})
		}
		for round := range rounds {
			for _, op := range ops {
				profiled := s.startProfile(t, round == 0, fmt.Sprintf("%s-%s-%s.pb.gz", backendOf(s.dsn), mode, op.name))
				namespace := op.namespace
				if strings.Contains(namespace, "%d") {
					namespace = fmt.Sprintf(namespace, round)
				}
				args := append([]string{"--namespace", namespace, "--op", op.name}, op.args...)
				r := bench(append(args, serverPIDArgs(s.proc.cmd.Process.Pid)...)...)
				t.Logf("%s %s, round %d: %s: server CPU %.0f µs per operation, %.0f per second, p99 %.1f ms", backendOf(s.dsn), mode, round,
					op.name, r.ServerCPUMicrosPerOp, r.OpsPerSecond, r.LatencyMs.P99)
				profiled()
			}
		}
	})
}

// cpuOp is one operation TestServerCPUPerRequest measures: the load tool's --op, its namespace
// (%d is the round) and its other flags.
type cpuOp struct {
	name, namespace string
	args            []string
}

// startProfile starts a CPU profile of the server, saved as name in SQLKUBE_CPU_PROFILE_DIR,
// if that is set and want, with the server's allocations since start before and after it (name
// with "allocs-before-" and "allocs-" in front; pprof -diff_base shows what the operation
// allocated); the function it returns waits for them.
func (s *sqlkubeServer) startProfile(t *testing.T, want bool, name string) func() {
	dir := os.Getenv("SQLKUBE_CPU_PROFILE_DIR")
	if dir == "" || !want {
		return func() {}
	}
	if err := s.saveProfile("allocs", filepath.Join(dir, "allocs-before-"+name)); err != nil {
		t.Error(err)
	}
	saved := make(chan error, 1)
	go func() { saved <- s.saveProfile("profile?seconds=6", filepath.Join(dir, name)) }()
	return func() {
		if err := <-saved; err != nil {
			t.Error(err)
		}
		if err := s.saveProfile("allocs", filepath.Join(dir, "allocs-"+name)); err != nil {
			t.Error(err)
		}
	}
}
