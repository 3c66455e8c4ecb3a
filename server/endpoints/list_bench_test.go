package endpoints_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/apiserver"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

const benchObjects = 10_000

// BenchmarkList lists 10,000 config maps (about 400 bytes each) through the HTTP handler:
// everything, one page of 500, and a label selector matching 1%. peak-heap-MB is the highest
// heap in use sampled while the lists ran.
func BenchmarkList(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchmarkList(b, sqltest.SQLiteDSN(b)) })
	b.Run("postgres", func(b *testing.B) { benchmarkList(b, sqltest.PostgresDSN(b)) })
}

func benchmarkList(b *testing.B, dsn string) {
	api := newTestAPI(b, dsn, apiserver.Options{})
	fillConfigMaps(b, api.store, benchObjects)
	for _, bc := range []struct{ name, query string }{
		{"all", ""},
		{"page500", "?limit=500"},
		{"label1pct", "?labelSelector=sample%3Dyes"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			peak := sampleHeap(b)
			b.ReportAllocs()
			var bytesRead int64
			for b.Loop() {
				resp, err := http.Get(api.http.URL + cmPath + bc.query)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
				bytesRead = n
			}
			b.ReportMetric(float64(bytesRead), "resp-bytes")
			b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MB")
		})
	}
}

// fillConfigMaps writes n config maps straight into storage, 1% labelled sample=yes.
func fillConfigMaps(b *testing.B, store *sqlstore.Store, n int) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	next := atomic.Int64{}
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				obj := benchConfigMap(int(i))
				key := sqlstore.Key{Resource: "configmaps", Namespace: "default", Name: obj.GetName()}
				if _, err := store.Write(context.Background(), sqlstore.Write{Op: sqlstore.OpCreate, Key: key, Render: renderAtRevision(obj)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

func benchConfigMap(i int) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"data": map[string]any{"payload": strings.Repeat("x", 200)},
	}}
	obj.SetName(fmt.Sprintf("cm-%05d", i))
	obj.SetNamespace("default")
	obj.SetUID("00000000-0000-0000-0000-000000000000")
	labels := map[string]string{"app": "bench"}
	if i%100 == 0 {
		labels["sample"] = "yes"
	}
	obj.SetLabels(labels)
	return obj
}

// sampleHeap samples the heap in use every millisecond until the benchmark ends, and returns
// a function reporting the peak.
func sampleHeap(b *testing.B) func() uint64 {
	runtime.GC()
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		ticker := time.NewTicker(time.Millisecond)
		defer ticker.Stop()
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
			}
		}
	}()
	b.Cleanup(func() { close(done) })
	return peak.Load
}
