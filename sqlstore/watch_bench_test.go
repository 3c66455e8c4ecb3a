package sqlstore

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// latencySetups open the stores a latency benchmark writes through and watches: one store, or
// two replicas on one PostgreSQL database (writes through one, watchers on the other).
var latencySetups = []struct {
	name string
	open func(testing.TB) (writer, watched *feedEnv)
}{
	{"memory", func(b testing.TB) (*feedEnv, *feedEnv) { // the feed and hub alone
		env := openMemoryEnv(b, 0)
		return env, env
	}},
	{"sqlite", func(b testing.TB) (*feedEnv, *feedEnv) {
		env := openDSNEnv(b, sqltest.SQLiteDSN(b), 0)
		return env, env
	}},
	{"postgres", func(b testing.TB) (*feedEnv, *feedEnv) {
		env := openDSNEnv(b, sqltest.PostgresDSN(b), 0)
		return env, env
	}},
	{"postgres-replicas", func(b testing.TB) (*feedEnv, *feedEnv) {
		dsn := sqltest.PostgresDSN(b)
		writer, watched := openDSNEnv(b, dsn, 0), openDSNEnv(b, dsn, 0)
		writeUntilNotified(b, watched, func(name string) int64 {
			return writer.write(b, OpCreate, Key{"warmup", "", name})
		})
		return writer, watched
	}},
}

// BenchmarkWatchLatency measures delivery latency, from Write returning to each watcher receiving
// the event, at about 100 writes/s. b.N is the number of writes: run it with -benchtime=300x.
//
//	go test ./sqlstore -run '^$' -bench WatchLatency -benchtime 300x
func BenchmarkWatchLatency(b *testing.B) {
	for _, setup := range latencySetups {
		for _, watchers := range []int{1, 100, 1000} {
			b.Run(fmt.Sprintf("%s/watchers=%d", setup.name, watchers), func(b *testing.B) {
				writer, watched := setup.open(b)
				benchLatency(b, writer, watched, watchers)
			})
		}
	}
}

func benchLatency(b *testing.B, writer, watched *feedEnv, watchers int) {
	base := watched.current(b)
	start := time.Now()
	// received[i][j]: when watcher i received revision base+1+j, as time since start.
	received := make([][]time.Duration, watchers)
	var wg sync.WaitGroup
	for i := range received {
		received[i] = make([]time.Duration, b.N)
		w := watched.watch(b, WatchOptions{Resource: "configmaps", After: base})
		wg.Go(func() {
			for j := range b.N {
				ev := <-w.Events()
				if ev == nil || ev.Revision != base+1+int64(j) {
					b.Errorf("watcher %d: got %v at position %d (err %v)", i, ev, j, w.Err())
					return
				}
				received[i][j] = time.Since(start)
			}
		})
	}
	returned := make([]time.Duration, b.N)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	b.ResetTimer()
	for j := range b.N {
		<-tick.C
		writer.write(b, OpCreate, Key{"configmaps", "ns", fmt.Sprintf("k%d", j)})
		returned[j] = time.Since(start)
	}
	wg.Wait()
	b.StopTimer()

	latencies := make([]time.Duration, 0, watchers*b.N)
	for _, times := range received {
		for j, at := range times {
			latencies = append(latencies, max(0, at-returned[j]))
		}
	}
	slices.Sort(latencies)
	percentile := func(p float64) float64 {
		return float64(latencies[int(p*float64(len(latencies)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(percentile(0.50), "p50-ms")
	b.ReportMetric(percentile(0.99), "p99-ms")
	b.ReportMetric(percentile(1), "max-ms")
}

// BenchmarkIdleWatcherMemory measures the heap an attached watcher holds while nothing happens,
// with the default buffer.
//
//	go test ./sqlstore -run '^$' -bench IdleWatcherMemory -benchtime 1x
func BenchmarkIdleWatcherMemory(b *testing.B) {
	const watchers = 10000
	env := openMemoryEnv(b, 0)
	env.write(b, OpCreate, Key{"configmaps", "ns", "a"})
	for range b.N {
		before := heapInUse()
		ws := make([]*Watcher, watchers)
		for i := range ws {
			w, err := env.feed.watch(context.Background(), WatchOptions{Resource: "configmaps", Namespace: fmt.Sprintf("ns%d", i%100), After: 1})
			if err != nil {
				b.Fatal(err)
			}
			ws[i] = w
		}
		after := heapInUse()
		b.ReportMetric(float64(after-before)/watchers, "bytes/watcher")
		for _, w := range ws {
			w.Close()
		}
	}
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
