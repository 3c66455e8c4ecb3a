package e2e

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// TestBenchAudit is issue 14's overhead budget for audit, run on demand only (make bench-audit):
//
//	SQLKUBE_BENCH_AUDIT=1 [SQLKUBE_BENCH_ROUNDS=8] go test ./e2e -run TestBenchAudit -v -timeout 1h
//
// On each backend, each round creates ConfigMaps with 64 clients for 10 s against two servers on
// fresh databases, in a random order: one without an audit policy and one recording every request
// at level Metadata, every stage, to a file in blocking mode. It logs each run and the mean over
// rounds of the audited run's throughput against the same round's unaudited one, ± its standard
// error: single runs on a 2-core machine vary by ±15%, so only many rounds in one sitting compare.
// The metrics cannot be turned off; docs/benchmarks.md measures them with a build without them.
func TestBenchAudit(t *testing.T) {
	if os.Getenv("SQLKUBE_BENCH_AUDIT") == "" {
		t.Skip("a benchmark: set SQLKUBE_BENCH_AUDIT=1 (make bench-audit)")
	}
	rounds := 8
	if n, err := strconv.Atoi(os.Getenv("SQLKUBE_BENCH_ROUNDS")); err == nil && n > 1 {
		rounds = n
	}
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		backend := backendOf(dsn)
		var ratios []float64
		cpu := map[string]time.Duration{}
		for round := range rounds {
			rates := map[string]float64{}
			for _, name := range shuffled("no audit", "audit") {
				t.Run(fmt.Sprintf("%d/%s", round+1, name), func(t *testing.T) {
					var args []string
					if name == "audit" {
						args = productionArgs(t)
					}
					rate, perCreate := auditBenchRun(t, newDSN(t, backend), args)
					t.Logf("%.0f creates/s, server CPU %d µs/create", rate, perCreate.Microseconds())
					rates[name] = rate
					cpu[name] += perCreate / time.Duration(rounds)
				})
			}
			if t.Failed() {
				return
			}
			ratios = append(ratios, rates["audit"]/rates["no audit"]-1)
		}
		mean, stderr := meanAndStdErr(ratios)
		t.Logf("%s: audit at Metadata changes creates/s by %+.1f%% ± %.1f%% (%d rounds); server CPU per create %d → %d µs",
			backend, 100*mean, 100*stderr, rounds, cpu["no audit"].Microseconds(), cpu["audit"].Microseconds())
	})
}

// auditBenchRun starts a server on dsn with args and returns its create throughput with 64
// clients over 10 s, after 2 s of warm-up, and its CPU per create; the server is stopped after.
func auditBenchRun(t *testing.T, dsn string, args []string) (float64, time.Duration) {
	s := startServer(t, dsn, args...)
	defer s.killIfRunning()
	runBench(t, s, "--namespace", "bench", "--op", "create", "--concurrency", "64", "--duration", "2s")
	cpu := s.cpuTime(t)
	r := runBench(t, s, "--namespace", "bench", "--op", "create", "--concurrency", "64", "--duration", "10s")
	return r.OpsPerSecond, (s.cpuTime(t) - cpu) / time.Duration(r.Ops)
}

// shuffled is names in a random order.
func shuffled(names ...string) []string {
	rand.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	return names
}

func meanAndStdErr(xs []float64) (mean, stderr float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var squares float64
	for _, x := range xs {
		squares += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(squares/float64(len(xs)-1)) / math.Sqrt(float64(len(xs)))
}
