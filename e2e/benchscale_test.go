package e2e

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// TestBenchScale is issue 17's figures at scale, run on demand only (make bench-scale):
//
//	SQLKUBE_SCALE_OBJECTS=1000000 SQLKUBE_SCALE_SUSTAIN=10m go test ./e2e -run TestBenchScale -v -timeout 4h
//
// In the production configuration (as TestBenchTable) it measures: the time to ready on an empty
// SQLite file; on each backend, gets, list pages of 500, updates and watch latency at 10,000
// objects and again at SQLKUBE_SCALE_OBJECTS, the creation rate in between, resident memory,
// the peak memory of a full list and of a WatchList of 100,000 objects, 10,000 idle watches,
// and the time to ready after a restart on all of them; then SQLKUBE_SCALE_SUSTAIN of updates
// on a fixed set with the database's size and the compaction metrics every minute; and creates
// and gets through one and three replicas of one PostgreSQL database. Every figure is logged
// with the load average at the time. Subtests can be picked with -run.
func TestBenchScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SQLKUBE_SCALE_OBJECTS"))
	if n <= 0 {
		t.Skip("a benchmark: set SQLKUBE_SCALE_OBJECTS to the number of objects (make bench-scale)")
	}
	sustain, err := time.ParseDuration(orDefault(os.Getenv("SQLKUBE_SCALE_SUSTAIN"), "10m"))
	if err != nil {
		t.Fatal(err)
	}
	args := productionArgs(t)
	t.Run("start-up", func(t *testing.T) { startupEmpty(t, args) })
	t.Run("size", func(t *testing.T) {
		forEachServerWith(t, args, func(t *testing.T, s *sqlkubeServer) { atScale(t, s, n) })
	})
	t.Run("sustained updates", func(t *testing.T) {
		forEachServerWith(t, args, func(t *testing.T, s *sqlkubeServer) { sustainedUpdates(t, s, sustain) })
	})
	t.Run("replicas", replicaScaling)
}

func orDefault(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// figure logs one measurement with the time and the machine's load average, which the shared
// machine makes part of every figure.
func figure(t *testing.T, format string, args ...any) {
	t.Helper()
	load, _ := os.ReadFile("/proc/loadavg")
	fields := strings.Fields(string(load))
	t.Logf("FIGURE %s [%s UTC, load %s]", fmt.Sprintf(format, args...), time.Now().UTC().Format("15:04:05"), strings.Join(fields[:min(3, len(fields))], " "))
}

// startupEmpty times a first start on a new SQLite file (certificates generated, migrations
// run) and three restarts on it, from exec to /readyz answering 200.
func startupEmpty(t *testing.T, args []string) {
	binary(t) // built before the clock starts
	started := time.Now()
	s := startServer(t, sqltest.SQLiteDSN(t), args...)
	figure(t, "empty SQLite, first start: ready in %d ms", time.Since(started).Milliseconds())
	for range 3 {
		s.stop()
		figure(t, "empty SQLite, restart: ready in %d ms", s.timedRestart().Milliseconds())
	}
}

func (s *sqlkubeServer) timedRestart() time.Duration {
	started := time.Now()
	s.restart()
	return time.Since(started)
}

// atScale loads the database through the API (an ordinary user, 64 clients) and measures at
// 10,000 objects, at 100,000 (memory of a full list and of a WatchList), and at n.
func atScale(t *testing.T, s *sqlkubeServer, n int) {
	user := s.benchUser(t)
	stored := 0
	fill := func(to int) {
		if to <= stored {
			return
		}
		r := runBenchFor(t, s, user, 2*time.Hour, "--resource", benchResource, "--create-crd", "--namespace", "big",
			"--op", "create", "--concurrency", "64", "--count", strconv.Itoa(to-stored))
		stored = to
		figure(t, "created up to %d: %.0f creates/s (p99 %.1f ms), resident %s", to, r.OpsPerSecond, r.LatencyMs.P99, s.memorySplit(t))
	}
	fill(10000)
	s.figuresAt(t, user, "10k")
	s.profile(t, "heap", "heap-10000")
	// The memory of a list or WatchList at 10,000 and 100,000 objects: O(page) if it does not grow.
	s.peakOfWatchList(t)
	s.peakOfFullList(t)
	if n >= 100000 {
		fill(100000)
		s.peakOfWatchList(t)
		s.peakOfFullList(t)
	}
	fill(n)
	s.figuresAt(t, user, strconv.Itoa(n))
	s.profile(t, "heap", fmt.Sprintf("heap-%d", n))
	s.idleWatches(t, 10000)
	s.stop()
	ready := s.timedRestart()
	figure(t, "restart on %d objects: ready in %d ms, resident %s", n, ready.Milliseconds(), s.memorySplit(t))
}

// figuresAt measures in the namespace holding the loaded objects: gets and updates of 1,000 of
// them, one client walking the collection in pages of 500, and watch latency with 1,000 watchers
// at 100 writes/s.
func (s *sqlkubeServer) figuresAt(t *testing.T, user, size string) {
	bench := func(args ...string) benchReport {
		return runBenchFor(t, s, user, 10*time.Minute, append([]string{"--resource", benchResource, "--namespace", "big"}, args...)...)
	}
	r := bench("--op", "get", "--objects", "1000", "--duration", "10s")
	figure(t, "%s: gets/s %.0f (p99 %.1f ms)", size, r.OpsPerSecond, r.LatencyMs.P99)
	r = bench("--op", "list", "--objects", "64", "--page-size", "500", "--concurrency", "1", "--duration", "10s")
	figure(t, "%s: page of 500, p50 %.1f ms, p99 %.1f ms (%d pages)", size, r.LatencyMs.P50, r.LatencyMs.P99, r.Ops)
	r = bench("--op", "update", "--objects", "1000", "--duration", "10s")
	figure(t, "%s: updates/s %.0f (p99 %.1f ms)", size, r.OpsPerSecond, r.LatencyMs.P99)
	r = bench("--op", "watch", "--watchers", "1000", "--rate", "100", "--duration", "10s")
	figure(t, "%s: watch p99 %.1f ms (1,000 watchers, 100 writes/s)", size, r.LatencyMs.P99)
	figure(t, "%s: resident %s", size, s.memorySplit(t))
}

// peak runs fn and returns the resident memory before it and the most seen while it ran, sampled
// every 10 ms from /proc, in MiB, anonymous (the heap) and file-backed (the binary, and SQLite's
// memory map of the database, which the kernel can reclaim) apart.
func (s *sqlkubeServer) peak(t *testing.T, fn func()) (before, peak memorySplit) {
	t.Helper()
	before = s.memorySplit(t)
	done := make(chan struct{})
	sampled := make(chan memorySplit)
	go func() {
		var top memorySplit
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if m, err := readMemorySplit(s.proc.cmd.Process.Pid); err == nil {
				top.anon, top.file = max(top.anon, m.anon), max(top.file, m.file)
			}
			select {
			case <-done:
				sampled <- top
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(done)
	return before, <-sampled
}

// memorySplit is resident memory in MiB: anonymous and file-backed.
type memorySplit struct{ anon, file int64 }

func (m memorySplit) String() string {
	return fmt.Sprintf("%d MiB (anonymous %d, file-backed %d)", m.anon+m.file, m.anon, m.file)
}

func (s *sqlkubeServer) memorySplit(t *testing.T) memorySplit {
	t.Helper()
	m, err := readMemorySplit(s.proc.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func readMemorySplit(pid int) (memorySplit, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memorySplit{}, err
	}
	var m memorySplit
	for line := range strings.Lines(string(status)) {
		name, value, _ := strings.Cut(line, ":")
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		switch name {
		case "RssAnon":
			m.anon = kb >> 10
		case "RssFile":
			m.file = kb >> 10
		}
	}
	return m, nil
}

const bigCollection = "/apis/bench.sqlkube.io/v1/namespaces/big/widgets"

// peakOfFullList reads the whole namespace in one response, as an admin (gzip, as Go's client
// asks for it by default).
func (s *sqlkubeServer) peakOfFullList(t *testing.T) {
	var bytes int64
	started := time.Now()
	before, peak := s.peak(t, func() {
		resp, err := s.httpClient().Get(s.URL() + bigCollection)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if bytes, err = io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != 200 {
			t.Fatalf("full list: %d, %v", resp.StatusCode, err)
		}
	})
	figure(t, "full list (%d MB) in %d ms: resident %s before, peak %s", bytes>>20, time.Since(started).Milliseconds(), before, peak)
}

// peakOfWatchList streams the namespace as a WatchList (sendInitialEvents) up to the bookmark
// that ends the initial events.
func (s *sqlkubeServer) peakOfWatchList(t *testing.T) {
	events := 0
	started := time.Now()
	before, peak := s.peak(t, func() {
		resp, err := s.httpClient().Get(s.URL() + bigCollection + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		dec := json.NewDecoder(bufio.NewReader(resp.Body))
		for {
			var ev struct {
				Type   string
				Object struct {
					Metadata struct{ Annotations map[string]string }
				}
			}
			if err := dec.Decode(&ev); err != nil {
				t.Fatalf("WatchList after %d events: %v", events, err)
			}
			if ev.Type == "BOOKMARK" && ev.Object.Metadata.Annotations["k8s.io/initial-events-end"] == "true" {
				return
			}
			events++
		}
	})
	figure(t, "WatchList of %d objects in %d ms: resident %s before, peak %s", events, time.Since(started).Milliseconds(), before, peak)
}

// idleWatches opens n watches (as the admin, whom priority and fairness exempts) that see a
// handful of events, and reports the peak growth of resident memory per watch. Watches the
// server ends are reported, not failed on: the figure is the memory of those connected.
func (s *sqlkubeServer) idleWatches(t *testing.T, n int) {
	var r benchReport
	var err error
	before, peak := s.peak(t, func() {
		r, err = execBench(s, s.kubeconfigPath(), 10*time.Minute, "--namespace", "idle", "--op", "watch",
			"--watchers", strconv.Itoa(n), "--rate", "2", "--count", "4", "--drain-timeout", "60s")
	})
	if err != nil || r.Watch == nil {
		t.Fatalf("idle watches: %v", err)
	}
	figure(t, "%d idle watches (%d connected, %d events lost, errors %v): resident %s before, peak %s (%d KiB anonymous per watch)",
		n, r.Watch.Connected, r.Watch.EventsLost, r.ErrorsByCode, before, peak, (peak.anon-before.anon)<<10/int64(n))
}

// profile saves the server's pprof profile kind (heap, or profile for 30 s of CPU) under
// SQLKUBE_SCALE_PROFILES, if set.
func (s *sqlkubeServer) profile(t *testing.T, kind, name string) {
	dir := os.Getenv("SQLKUBE_SCALE_PROFILES")
	if dir == "" {
		return
	}
	backend := "sqlite"
	if strings.HasPrefix(s.dsn, "postgres") {
		backend = "postgres"
	}
	if err := s.saveProfile(kind, fmt.Sprintf("%s/%s-%s.pprof", dir, backend, name)); err != nil {
		t.Fatal(err)
	}
}

// saveProfile saves the server's pprof profile kind (with its query, if any) in the file path;
// it does not touch a test, so that it can run beside a load.
func (s *sqlkubeServer) saveProfile(kind, path string) error {
	resp, err := s.httpClient().Get(s.URL() + "/debug/pprof/" + kind)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/debug/pprof/%s: %s", kind, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}

// sustainedUpdatesSampler logs the database's size, the server's resident memory and the
// compaction metrics every minute until done is closed.
func (s *sqlkubeServer) sustainedUpdatesSampler(t *testing.T, done <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Minute)
		defer tick.Stop()
		for minute := 1; ; minute++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			size, err := databaseSize(s.dsn)
			if err != nil {
				t.Errorf("database size: %v", err)
			}
			mem, err := readMemorySplit(s.proc.cmd.Process.Pid)
			if err != nil {
				t.Errorf("resident memory: %v", err)
			}
			figure(t, "sustained updates, minute %d: database %d MiB, resident %s, %s", minute, size>>20, mem, s.compactionMetrics())
		}
	})
	return &wg
}

// sustainedUpdates updates 1,000 objects with 64 clients for d, as fast as they go.
func sustainedUpdates(t *testing.T, s *sqlkubeServer, d time.Duration) {
	user := s.benchUser(t)
	done := make(chan struct{})
	sampler := s.sustainedUpdatesSampler(t, done)
	r := runBenchFor(t, s, user, d+10*time.Minute, "--resource", benchResource, "--create-crd", "--namespace", "sustain",
		"--op", "update", "--objects", "1000", "--duration", d.String())
	close(done)
	sampler.Wait()
	size, err := databaseSize(s.dsn)
	if err != nil {
		t.Fatal(err)
	}
	figure(t, "sustained updates over %s: %.0f updates/s (p99 %.1f ms), database %d MiB at the end", d, r.OpsPerSecond, r.LatencyMs.P99, size>>20)
}

// compactionMetrics is the compaction lines of /metrics, histogram buckets left out.
func (s *sqlkubeServer) compactionMetrics() string {
	resp, err := s.httpClient().Get(s.URL() + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	var lines []string
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		l := sc.Text()
		if strings.HasPrefix(l, "sqlkube_compaction") && !strings.Contains(l, "_bucket") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}

// databaseSize is the SQLite file with its write-ahead log, or the PostgreSQL database's size.
func databaseSize(dsn string) (int64, error) {
	if path, ok := strings.CutPrefix(dsn, "sqlite://"); ok {
		var total int64
		for _, suffix := range []string{"", "-wal"} {
			if fi, err := os.Stat(path + suffix); err == nil {
				total += fi.Size()
			}
		}
		return total, nil
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var size int64
	err = db.QueryRow("SELECT pg_database_size(current_database())").Scan(&size)
	return size, err
}

// replicaScaling compares creates and gets through one replica with the same 64 clients spread
// over three replicas of one PostgreSQL database (admin clients).
func replicaScaling(t *testing.T) {
	_, replicas := startReplicas(t, 3)
	for _, op := range []string{"create", "get"} {
		for _, k := range []int{1, 3} {
			reports := make([]benchReport, k)
			errs := make([]error, k)
			var wg sync.WaitGroup
			for i := range k {
				wg.Go(func() {
					reports[i], errs[i] = execBench(replicas[i], replicas[i].kubeconfigPath(), 10*time.Minute,
						"--resource", benchResource, "--create-crd", "--namespace", fmt.Sprintf("replicas-%s-%d-%d", op, k, i),
						"--op", op, "--objects", "1000", "--concurrency", strconv.Itoa(64/k+boolInt(i < 64%k)), "--duration", "10s")
				})
			}
			wg.Wait()
			var total float64
			for i, r := range reports {
				if errs[i] != nil || r.Errors != 0 {
					t.Fatalf("replica %d: %v, %d errors %v", i, errs[i], r.Errors, r.ErrorSamples)
				}
				total += r.OpsPerSecond
			}
			figure(t, "%d replica(s), 64 clients in all: %.0f %ss/s", k, total, op)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
