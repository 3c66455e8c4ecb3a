package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"
)

// BenchmarkClient measures what the tool itself costs per operation, against the null server in
// another process: cpu-µs/op and allocs/op are the tool's alone (the working set is prepared
// before measuring), server-cpu-µs/op the null server's, conns the connections the server
// accepted over the whole run (one per client plus one for setup when keep-alive holds). The
// garbage collector is tuned as in a run of the tool (set GOGC to compare).
func BenchmarkClient(b *testing.B) {
	tuneGC()
	for _, tc := range []struct {
		name    string
		latency time.Duration
		args    []string
	}{
		{opCreate, 0, []string{"--op", opCreate, "--concurrency", "64"}},
		// 64 clients waiting 8 ms for each answer: 8,000 creates/s on an idle machine, the rate issue
		// 6 asks for, where the tool's goroutines sleep and wake for every request.
		{"create-8ms", 8 * time.Millisecond, []string{"--op", opCreate, "--concurrency", "64"}},
		{opUpdate, 0, []string{"--op", opUpdate, "--concurrency", "64"}},
		{opGet, 0, []string{"--op", opGet, "--concurrency", "64"}},
		{opList, 0, []string{"--op", opList, "--concurrency", "8", "--page-size", "500"}},
	} {
		b.Run(tc.name, func(b *testing.B) { benchmarkClientOp(b, tc.latency, tc.args...) })
	}
}

func benchmarkClientOp(b *testing.B, latency time.Duration, args ...string) {
	srv := startNullServer(b, latency)
	bn := newNullBench(b, srv, args...)
	ctx := context.Background()
	if bn.opts.needsWorkingSet() {
		if err := bn.prepareWorkingSet(ctx); err != nil {
			b.Fatal(err)
		}
	}
	rep := measureClient(b, srv, b.N, func() report {
		rep, err := bn.measureOps(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return rep
	})
	b.ReportMetric(rep.OpsPerSecond, "ops/s")
}

// BenchmarkWatch1000 measures what the tool costs per event delivered to 1,000 watchers, with
// writes at 100/s as in `--op watch --watchers 1000 --rate 100`. One op is one event; the
// watchers' connecting and the writer's creates (one per 1,000 events) are included.
func BenchmarkWatch1000(b *testing.B) {
	tuneGC()
	const watchers = 1000
	srv := startNullServer(b, 0)
	writes := max(b.N/watchers, 1)
	bn := newNullBench(b, srv, "--op", "watch", "--watchers", strconv.Itoa(watchers), "--rate", "100", "--count", strconv.Itoa(writes))
	rep := measureClient(b, srv, writes*watchers, func() report {
		rep, err := bn.runWatch(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		return rep
	})
	if rep.Watch.EventsLost != 0 {
		b.Fatalf("%d events lost", rep.Watch.EventsLost)
	}
}

// newNullBench sets the tool up against the null server, with --count b.N.
func newNullBench(b *testing.B, srv *nullProcess, args ...string) *bench {
	o, err := parseFlags(append([]string{"--server", srv.URL, "--count", strconv.Itoa(b.N)}, args...), io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	bn, err := newBench(context.Background(), o, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	return bn
}

// measureClient runs measure, which makes ops operations, and reports the tool's and the null
// server's CPU time per operation and the connections the server accepted.
func measureClient(b *testing.B, srv *nullProcess, ops int, measure func() report) report {
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	rep := measure()
	used := cpuTime() - start
	b.StopTimer()
	if rep.Errors != 0 || rep.Ops != int64(ops) {
		b.Fatalf("%d ops of %d, errors %v %v", rep.Ops, ops, rep.ErrorsByCode, rep.ErrorSamples)
	}
	conns, serverCPU := srv.stop()
	perOp := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(ops) }
	b.ReportMetric(perOp(used), "cpu-µs/op")
	b.ReportMetric(perOp(serverCPU), "server-cpu-µs/op")
	b.ReportMetric(float64(conns), "conns")
	return rep
}

// BenchmarkWatchConsume measures what reading one 1 KiB watch event costs a watcher.
func BenchmarkWatchConsume(b *testing.B) {
	bench := &bench{runID: "r"}
	tgt := newTarget(resourceRef{Version: "v1", Resource: "configmaps"}, "ConfigMap", "ns", "r", 1024)
	var stream bytes.Buffer
	for i := range b.N {
		event := fmt.Sprintf(`{"type":"ADDED","object":%s}`+"\n", tgt.body.render(bench.watchObjectName(i%1000), "12345", 0))
		stream.WriteString(event)
	}
	w := &watcher{b: bench, writes: newWriteTimes(1000), rec: newRecorder()}
	b.SetBytes(int64(stream.Len() / b.N))
	b.ResetTimer()
	if o := w.consume(&stream); !o.ok() || w.received != int64(b.N) {
		b.Fatalf("%+v, received %d of %d", o, w.received, b.N)
	}
}
