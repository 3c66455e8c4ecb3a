package services

import (
	"context"
	"sync"
	"testing"

	"k8s.io/kubernetes/pkg/registry/core/service/allocator"

	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// newRange is a range of size items kept in store, as each replica makes its own.
func newRange(store Storage, size int) *storedRange {
	return &storedRange{store: store, key: nodePortsKey, bitmap: allocator.NewAllocationMapWithOffset(size, "0-99", 0)}
}

// TestStoredRangeSharedByReplicas: two allocators on one stored bitmap, as two replicas on one
// database, hand out every item once, see each other's allocations and releases, and report
// the range full when it is.
func TestStoredRangeSharedByReplicas(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		store, err := sqlstore.Open(context.Background(), sqltest.Database(t, dsn, sqlstore.SQLite, sqlstore.Postgres), sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = store.Close() })
		const size = 40
		a, b := newRange(store, size), newRange(store, size)
		got := make(chan int, size)
		var wg sync.WaitGroup
		for i := range size {
			r := a
			if i%2 == 1 {
				r = b
			}
			wg.Go(func() {
				item, ok, err := r.AllocateNext()
				if err != nil || !ok {
					t.Errorf("AllocateNext: %d %v %v", item, ok, err)
				}
				got <- item
			})
		}
		wg.Wait()
		close(got)
		seen := map[int]bool{}
		for item := range got {
			if seen[item] {
				t.Errorf("item %d handed out twice", item)
			}
			seen[item] = true
		}
		if _, ok, err := a.AllocateNext(); ok || err != nil {
			t.Errorf("AllocateNext on a full range: %v %v, want not ok", ok, err)
		}
		if err := b.Release(7); err != nil {
			t.Fatal(err)
		}
		if ok, err := a.Allocate(7); !ok || err != nil {
			t.Errorf("Allocate of an item the other released: %v %v", ok, err)
		}
		if ok, err := b.Allocate(7); ok || err != nil {
			t.Errorf("Allocate of an item the other holds: %v %v, want not ok", ok, err)
		}
	})
}
