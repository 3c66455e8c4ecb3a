package apiserver_test

import (
	"fmt"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sqlkube/sqlkube/server/apiserver"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// TestStartupDoesNotHoldTheDatabase: starting on 100,000 stored objects of 1 KiB, the heap grows
// by a fraction of their size until the garbage collector has listed every type and acts (an
// owner deleted right after the start takes its dependent with it). Followers that held a whole
// list at once made it grow by more than the objects themselves (issue 20).
func TestStartupDoesNotHoldTheDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 100,000 objects")
	}
	const objects = 100_000
	empty := startupHeapGrowth(t, 0)
	full := startupHeapGrowth(t, objects)
	t.Logf("peak heap growth through start-up: %.1f MiB with no objects, %.1f MiB with %d", mib(empty), mib(full), objects)
	// The objects are ~110 MiB as stored; a start-up that keeps none of them stays well below.
	if full > empty+40<<20 {
		t.Errorf("start-up on %d objects grew the heap by %.1f MiB more than on none", objects, mib(full-empty))
	}
}

// startupHeapGrowth fills a new SQLite store with n config maps, then starts a server on it and
// returns how far the live heap rose above what it was before, until the garbage collector has
// deleted the dependent of an owner deleted right after the start. The store has no Mark, so
// that the collector's start lists every stored object.
func startupHeapGrowth(t *testing.T, n int) uint64 {
	store, err := sqlstore.Open(t.Context(), sqlstore.SQLite(sqltest.SQLitePath(t)), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	fillStore(t, store, n)
	before := heapObjectBytes()
	peak := trackPeak(t)

	srv, err := apiserver.New(t.Context(), store, apiserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	configMaps := kubernetes.NewForConfigOrDie(&rest.Config{Host: hs.URL}).CoreV1().ConfigMaps("default")
	owner, err := configMaps.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	block := false
	dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: &block}}}}
	if _, err := configMaps.Create(t.Context(), dependent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := configMaps.Delete(t.Context(), "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := configMaps.Get(t.Context(), "dependent", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dependent is not gone: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return max(peak(), before) - before
}

// fillStore writes n 1 KiB config maps in namespace default straight into storage.
func fillStore(t *testing.T, store *sqlstore.Store, n int) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				name := fmt.Sprintf("cm-%06d", i)
				value := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"default","uid":"u-%d"},"data":{"payload":"%01024d"}}`, name, i, i)
				key := sqlstore.Key{Resource: "configmaps", Namespace: "default", Name: name}
				if _, err := store.Write(t.Context(), sqlstore.Write{Op: sqlstore.OpCreate, Key: key, Render: func(int64) ([]byte, error) { return value, nil }}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// trackPeak samples the live heap every 20 ms until the test ends; the function it
// returns gives the highest sample so far.
func trackPeak(t *testing.T) func() uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		ticker := time.NewTicker(20 * time.Millisecond)
		defer ticker.Stop()
		for {
			if v := heapObjectBytes(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-ticker.C:
			}
		}
	}()
	return peak.Load
}

// heapObjectBytes is the heap the program's objects occupy after a collection: what it holds,
// not garbage waiting to be collected.
func heapObjectBytes() uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

func mib(bytes uint64) float64 { return float64(bytes) / (1 << 20) }
