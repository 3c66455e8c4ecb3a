package registry_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/internal/benchcpu"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// BenchmarkWatchFanOutByNode: 1,000 watches of pods, each selecting one spec.nodeName as a
// kubelet's does; each op changes a pod bound to node-0 and waits for node-0's watch to get
// it. cpu-µs/op is the whole process's CPU per op: the write, and the work of every watch the
// event reaches (all of them when watchers are not indexed by node, one when they are).
//
//	go test ./server/registry -run '^$' -bench WatchFanOutByNode -benchtime 2000x
func BenchmarkWatchFanOutByNode(b *testing.B) {
	const nodes = 1000
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	reg, pods := benchRegistry(b, ctx)
	received := make(chan watch.EventType, 16)
	var others atomic.Int64 // events any other node's watch got
	for i := range nodes {
		w, err := reg.Watch(ctx, registry.Ref{Resource: pods}, &internalversion.ListOptions{Watch: true,
			FieldSelector: fields.OneTermEqualSelector("spec.nodeName", fmt.Sprintf("node-%d", i))})
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := w.Next(nil); ok || !w.Started() { // its start: no initial events
			b.Fatal("the watch did not start")
		}
		go func() {
			defer w.Stop()
			for !w.Done() {
				if ev, ok := w.Next(nil); ok && i == 0 {
					received <- ev.Type
				} else if ok {
					others.Add(1)
				}
			}
		}()
	}
	pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "namespace": "default"},
		"spec":     map[string]any{"nodeName": "node-0", "containers": []any{map[string]any{"name": "c", "image": "i"}}}}}
	ref := registry.Ref{Resource: pods, Namespace: "default", Name: "p"}
	if _, _, err := reg.Create(ctx, registry.Ref{Resource: pods, Namespace: "default"}, pod, &metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	wantReceived(b, received, watch.Added)

	b.ReportAllocs()
	reportCPU := benchcpu.Report(b)
	b.ResetTimer()
	for i := range b.N {
		_, err := reg.GuaranteedUpdate(ctx, ref, false, func(obj *unstructured.Unstructured) error {
			obj.SetLabels(map[string]string{"n": fmt.Sprint(i)})
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		wantReceived(b, received, watch.Modified)
	}
	b.StopTimer()
	reportCPU()
	if n := others.Load(); n > 0 {
		b.Errorf("other nodes' watches got %d events", n)
	}
}

func wantReceived(b *testing.B, received <-chan watch.EventType, want watch.EventType) {
	select {
	case got := <-received:
		if got != want {
			b.Fatalf("node-0's watch got %s, want %s", got, want)
		}
	case <-time.After(10 * time.Second):
		b.Fatalf("node-0's watch got no %s", want)
	}
}

// benchRegistry is a registry on a new SQLite store, and its pods type.
func benchRegistry(b *testing.B, ctx context.Context) (*registry.Registry, *resource.Resource) {
	store, err := sqlstore.Open(ctx, sqltest.Database(b, sqltest.SQLiteDSN(b), sqlstore.SQLite, sqlstore.Postgres), sqlstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })
	types := map[string]*resource.Resource{}
	for _, r := range builtin.Resources(func(*resource.Resource) {}, nil) {
		if r.ServesStorageVersion() {
			types[r.StorageName] = r
		}
	}
	reg, err := registry.New(ctx, store, types["namespaces"], registry.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return reg, types["pods"]
}

// BenchmarkIdleWatchMemory is the heap one idle registry watch of pods holds once started (a
// kubelet's: spec.nodeName pinned, bookmarks on), store's part included: what the HTTP layer's
// watch adds to its request's goroutine and connection.
//
//	go test ./server/registry -run '^$' -bench IdleWatchMemory -benchtime 1x
func BenchmarkIdleWatchMemory(b *testing.B) {
	const watches = 10000
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	reg, pods := benchRegistry(b, ctx)
	for range b.N {
		before := heapInUse()
		ws := make([]*registry.Watch, watches)
		for i := range ws {
			w, err := reg.Watch(ctx, registry.Ref{Resource: pods}, &internalversion.ListOptions{Watch: true, AllowWatchBookmarks: true,
				FieldSelector: fields.OneTermEqualSelector("spec.nodeName", fmt.Sprintf("node-%d", i))})
			if err != nil {
				b.Fatal(err)
			}
			if _, ok := w.Next(nil); ok || !w.Started() {
				b.Fatal("the watch did not start")
			}
			ws[i] = w
		}
		b.ReportMetric(float64(heapInUse()-before)/watches, "bytes/watch")
		for _, w := range ws {
			w.Stop()
		}
	}
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
