package sqlstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// recorder is an Observer that counts what it is told.
type recorder struct {
	mu                                sync.Mutex
	committed, published, caughtUp    int
	compactions, removed, checkpoints int64
	woken                             map[string]int
}

func (r *recorder) Committed(writes int, _ time.Duration) { r.add(func() { r.committed += writes }) }
func (r *recorder) Published(events int, _ time.Duration) { r.add(func() { r.published += events }) }
func (r *recorder) Woken(reason string)                   { r.add(func() { r.woken[reason]++ }) }
func (r *recorder) CaughtUp(events int)                   { r.add(func() { r.caughtUp += events }) }
func (r *recorder) Compacted(rows int64, _ time.Duration) {
	r.add(func() { r.compactions++; r.removed += rows })
}
func (r *recorder) Checkpointed(time.Duration) { r.add(func() { r.checkpoints++ }) }

func (r *recorder) add(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
}

func (r *recorder) get(f func() bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return f()
}

// TestObserverAndStats: the Observer hears of every write committed and published, and of a
// compaction and the rows it removed; Stats reports the revisions, the window and the watchers.
func TestObserverAndStats(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		rec := &recorder{woken: map[string]int{}}
		s := openStoreWith(t, dsn, sqlstore.Options{Observer: rec})
		ctx := context.Background()
		w, err := s.Watch(ctx, sqlstore.WatchOptions{Resource: "configmaps", After: currentRevision(t, s)})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		first := create(t, s, cm("a", "x"), "1")
		mustUpdate(t, s, first.Key, first.Revision, "2")
		create(t, s, cm("a", "y"), "3")
		waitUntil(t, "3 writes committed and published", func() bool {
			return rec.get(func() bool { return rec.committed == 3 && rec.published+rec.caughtUp >= 3 })
		})
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.CurrentRevision != currentRevision(t, s) || st.PublishedRevision != st.CurrentRevision ||
			st.WindowEvents < 3 || st.WindowBytes <= 0 || st.Watchers != 1 || st.Reader.MaxOpenConnections == 0 {
			t.Errorf("stats %+v", st)
		}
		if err := s.Compact(ctx, st.CurrentRevision); err != nil {
			t.Fatal(err)
		}
		// The update made the create's row of x unnecessary.
		if !rec.get(func() bool { return rec.compactions == 1 && rec.removed == 1 }) {
			t.Errorf("compactions %d removing %d rows, want 1 removing 1", rec.compactions, rec.removed)
		}
		if st, _ := s.Stats(ctx); st.CompactedRevision != st.CurrentRevision {
			t.Errorf("compacted revision %d, want %d", st.CompactedRevision, st.CurrentRevision)
		}
	})
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
