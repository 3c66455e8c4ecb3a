package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestServerCPUPerRequest is issue 33's measurement of the server's CPU per get and per create,
// run on demand only:
//
//	SQLKUBE_CPU_PER_REQUEST=1 go test ./e2e -run TestServerCPUPerRequest -v
//
// On each backend it starts sqlkube in the production configuration (as TestBenchTable, with
// its ordinary user and 1,000 RoleBindings), or with SQLKUBE_CPU_PLAIN=1 in --plain-http, and
// runs gets and creates of 1 KiB custom resources from 64 clients, a fixed number of each,
// SQLKUBE_CPU_ROUNDS times (default 2), logging the server's CPU per operation from /proc. With
// SQLKUBE_CPU_PROFILE_DIR=DIR, the first round also saves a CPU profile of each operation
// (/debug/pprof/profile) there. SQLKUBE_E2E_SERVER_BINARY runs another build's server, for
// before-and-after figures in one sitting.
func TestServerCPUPerRequest(t *testing.T) {
	if os.Getenv("SQLKUBE_CPU_PER_REQUEST") == "" {
		t.Skip("a benchmark: set SQLKUBE_CPU_PER_REQUEST=1")
	}
	plain := os.Getenv("SQLKUBE_CPU_PLAIN") != ""
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
			return runBenchAs(t, s, user, append([]string{"--resource", benchResource, "--create-crd", "--concurrency", "64"}, args...)...)
		}
		bench("--namespace", "gets", "--op", "get", "--objects", "1000", "--count", "2000") // the working set
		for round := range rounds {
			for _, op := range []struct{ name, namespace, count string }{
				{"get", "gets", "20000"},
				{"create", fmt.Sprintf("creates-%d", round), "6000"},
			} {
				profiled := s.startProfile(t, round == 0, fmt.Sprintf("%s-%s-%s.pb.gz", backendOf(s.dsn), mode, op.name))
				cpu := s.cpuTime(t)
				r := bench("--namespace", op.namespace, "--op", op.name, "--objects", "1000", "--count", op.count)
				per := (s.cpuTime(t) - cpu) / time.Duration(r.Ops)
				t.Logf("%s %s, round %d: server CPU %d µs/%s, %.0f %ss/s", backendOf(s.dsn), mode, round, per.Microseconds(), op.name, r.OpsPerSecond, op.name)
				profiled()
			}
		}
	})
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
