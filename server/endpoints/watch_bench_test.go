package endpoints_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/server/apiserver"
	"github.com/sqlkube/sqlkube/server/internal/benchcpu"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// benchWriteInterval paces the writer at about 100 writes per second.
const benchWriteInterval = 10 * time.Millisecond

// BenchmarkWatchDelivery measures delivery latency over HTTP: from a write's acknowledgement (its
// response received) to each watcher reading its event off the wire, with 1, 100 and 1,000
// watchers while writes come at about 100/s. b.N is the number of writes; run it with e.g.
// -benchtime=300x.
func BenchmarkWatchDelivery(b *testing.B) {
	for _, backend := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"sqlite", sqltest.SQLiteDSN}, {"postgres", sqltest.PostgresDSN}} {
		for _, watchers := range []int{1, 100, 1000} {
			b.Run(fmt.Sprintf("%s/watchers=%d", backend.name, watchers), func(b *testing.B) {
				benchmarkDelivery(b, newTestAPI(b, backend.dsn(b), apiserver.Options{}), watchers)
			})
		}
	}
}

func benchmarkDelivery(b *testing.B, api *testAPI, watchers int) {
	start := api.listRV()
	received := make(chan delivery, watchers*64)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		wg.Wait()
	}()
	for range watchers {
		resp := openBenchWatch(b, ctx, api, configMapsPath+"?watch=1&resourceVersion="+start)
		wg.Add(1)
		go func() {
			defer wg.Done()
			readDeliveries(resp, received)
		}()
	}
	acked := make(map[int64]time.Time, b.N)
	var latencies []time.Duration
	collect := func(d delivery) {
		latencies = append(latencies, max(0, d.at.Sub(acked[d.revision])))
	}
	b.ResetTimer()
	ticker := time.NewTicker(benchWriteInterval)
	defer ticker.Stop()
	var pending []delivery // events read before their write's acknowledgement was recorded
	for i := range b.N {
		<-ticker.C
		rv, err := strconv.ParseInt(api.put(fmt.Sprintf("bench-%d", i%50), nil, strconv.Itoa(i)), 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		acked[rv] = time.Now()
		pending = drainDeliveries(received, pending, acked, collect)
	}
	want := b.N * watchers
	deadline := time.After(eventWait)
	for len(latencies) < want {
		select {
		case d := <-received:
			pending = append(pending, d)
			pending = drainDeliveries(nil, pending, acked, collect)
		case <-deadline:
			b.Fatalf("%d of %d events delivered", len(latencies), want)
		}
	}
	b.StopTimer()
	slices.Sort(latencies)
	b.ReportMetric(ms(latencies[len(latencies)/2]), "p50-ms")
	b.ReportMetric(ms(latencies[len(latencies)*99/100]), "p99-ms")
	b.ReportMetric(ms(latencies[len(latencies)-1]), "max-ms")
}

// delivery is one event read by one watcher.
type delivery struct {
	revision int64
	at       time.Time
}

// drainDeliveries takes what has arrived without waiting, and records every delivery whose
// write has been acknowledged; it returns the others.
func drainDeliveries(received <-chan delivery, pending []delivery, acked map[int64]time.Time, collect func(delivery)) []delivery {
	for more := received != nil; more; {
		select {
		case d := <-received:
			pending = append(pending, d)
		default:
			more = false
		}
	}
	kept := pending[:0]
	for _, d := range pending {
		if _, ok := acked[d.revision]; ok {
			collect(d)
		} else {
			kept = append(kept, d)
		}
	}
	return kept
}

func openBenchWatch(b *testing.B, ctx context.Context, api *testAPI, path string) *http.Response {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, api.http.URL+path, nil)
	resp, err := api.http.Client().Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("watch: %v", err)
	}
	return resp
}

var resourceVersionField = []byte(`"resourceVersion":"`)

// readDeliveries reads a watch stream, timing each event as it arrives. It finds the event's
// revision without decoding the event, so that 1,000 readers in the benchmark's process cost
// little next to the server.
func readDeliveries(resp *http.Response, received chan<- delivery) {
	defer resp.Body.Close()
	scanner := bufio.NewScanner(resp.Body)
	for scanner.Scan() {
		at := time.Now()
		line := scanner.Bytes()
		i := bytes.Index(line, resourceVersionField)
		if i < 0 {
			continue
		}
		rest := line[i+len(resourceVersionField):]
		rv, err := strconv.ParseInt(string(rest[:bytes.IndexByte(rest, '"')]), 10, 64)
		if err == nil {
			received <- delivery{revision: rv, at: at}
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkWatchIdleMemory measures the server's heap per idle watch: watches are opened over raw
// connections that hold no client-side buffers or goroutines, so the growth is the server's.
func BenchmarkWatchIdleMemory(b *testing.B) {
	const watchers = 1000
	api := newTestAPI(b, sqltest.SQLiteDSN(b), apiserver.Options{})
	path := configMapsPath + "?watch=1&resourceVersion=" + api.listRV()
	before := heapInUse()
	conns := make([]net.Conn, 0, watchers)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range watchers {
		c, err := net.Dial("tcp", api.http.Listener.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: bench\r\n\r\n", path); err != nil {
			b.Fatal(err)
		}
	}
	// Every watch is established once its response header has arrived.
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(eventWait))
		if _, err := http.ReadResponse(bufio.NewReaderSize(c, 512), nil); err != nil {
			b.Fatal(err)
		}
	}
	after := heapInUse()
	b.ReportMetric(float64(after-before)/watchers, "heap-bytes/watcher")
	b.ReportMetric(float64(runtime.NumGoroutine())/watchers, "goroutines/watcher")
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse) + int64(m.StackInuse)
}

// BenchmarkWatchFanOut measures the CPU a write and its delivery to 100 watches cost, as
// cpu-µs/write: the whole process's CPU time per write (server, store and the in-process clients,
// which read their streams without decoding them). Writes come at about 100/s, so that each event
// is written to each stream on its own, as at the load tool's rate. b.N is the number of writes:
// run it with e.g. -benchtime=300x.
func BenchmarkWatchFanOut(b *testing.B) {
	const watchers = 100
	api := newTestAPI(b, sqltest.SQLiteDSN(b), apiserver.Options{})
	path := configMapsPath + "?watch=1&resourceVersion=" + api.listRV()
	var wg sync.WaitGroup
	for range watchers {
		body := openRawWatch(b, api, path)
		wg.Go(func() { countLines(b, body, b.N) })
	}
	ticker := time.NewTicker(benchWriteInterval)
	defer ticker.Stop()
	b.ResetTimer()
	reportCPU := benchcpu.ReportPer(b, "write")
	for i := range b.N {
		<-ticker.C
		api.put(fmt.Sprintf("bench-%d", i%50), nil, strconv.Itoa(i))
	}
	wg.Wait()
	reportCPU()
}

// openRawWatch opens a watch over a connection of its own and returns its body once the header
// has arrived; the connection closes when the benchmark ends.
func openRawWatch(b *testing.B, api *testAPI, path string) io.Reader {
	c, err := net.Dial("tcp", api.http.Listener.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: bench\r\n\r\n", path); err != nil {
		b.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 64<<10), nil)
	if err != nil {
		b.Fatal(err)
	}
	return resp.Body
}

// countLines reads body until it has seen n event lines.
func countLines(b *testing.B, body io.Reader, n int) {
	buf := make([]byte, 64<<10)
	for seen := 0; seen < n; {
		k, err := body.Read(buf)
		if err != nil {
			b.Errorf("after %d of %d events: %v", seen, n, err)
			return
		}
		seen += bytes.Count(buf[:k], []byte{'\n'})
	}
}
