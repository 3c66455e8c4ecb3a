package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// acked is one acknowledged write.
type acked struct {
	write sqlstore.Write
	obj   sqlstore.Object
}

// TestConcurrentWritesAreExact runs 50 goroutines mixing creates, updates and deletes on shared
// and private keys, then checks that revisions are gapless and unique, that every failure is the
// precondition error it should be, and that each key's history is a chain of acknowledged writes,
// each based on the one before: optimistic concurrency lost nothing and let nothing through.
func TestConcurrentWritesAreExact(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		const goroutines, opsEach = 50, 40
		var mu sync.Mutex
		var log []acked
		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		stopLists := make(chan struct{})
		listsDone := make(chan error, 1)
		go func() { listsDone <- checkSnapshotsWhile(s, stopLists) }()
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(g), 1))
				for i := range opsEach {
					w := randomWrite(s, rng, g, i)
					obj, err := s.Write(context.Background(), w)
					if err != nil {
						if !expectedFailure(w.Op, err) {
							errs <- fmt.Errorf("%v %v: unexpected error %w", w.Op, w.Key, err)
							return
						}
						continue
					}
					mu.Lock()
					log = append(log, acked{write: w, obj: obj})
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(stopLists)
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if err := <-listsDone; err != nil {
			t.Error(err)
		}
		checkLog(t, s, log)
	})
}

// randomWrite picks a write on one of 5 shared keys or on the goroutine's own key, based on the
// key's state as read just before (which other goroutines may change in between).
func randomWrite(s *sqlstore.Store, rng *rand.Rand, g, i int) sqlstore.Write {
	key := cm("shared", fmt.Sprintf("k%d", rng.IntN(5)))
	if rng.IntN(3) == 0 {
		key = cm("own", fmt.Sprintf("g%02d", g))
	}
	w := sqlstore.Write{Key: key, Render: body(fmt.Sprintf("g%d-%d", g, i))}
	current, err := s.Get(context.Background(), key)
	switch {
	case err != nil:
		w.Op = sqlstore.OpCreate
	case rng.IntN(4) == 0:
		w.Op, w.ExpectedRevision = sqlstore.OpDelete, current.Revision
	default:
		w.Op, w.ExpectedRevision = sqlstore.OpUpdate, current.Revision
	}
	return w
}

func expectedFailure(op sqlstore.Op, err error) bool {
	if op == sqlstore.OpCreate {
		return errors.Is(err, sqlstore.ErrExists)
	}
	return errors.Is(err, sqlstore.ErrConflict) || errors.Is(err, sqlstore.ErrNotFound)
}

// checkLog checks the acknowledged writes against the store.
func checkLog(t *testing.T, s *sqlstore.Store, log []acked) {
	t.Helper()
	slices.SortFunc(log, func(a, b acked) int { return int(a.obj.Revision - b.obj.Revision) })
	for i, a := range log {
		if a.obj.Revision != int64(i+1) {
			t.Fatalf("acknowledged revisions are not 1..n without gaps or duplicates: #%d is %d", i, a.obj.Revision)
		}
	}
	if rev := currentRevision(t, s); rev != int64(len(log)) {
		t.Fatalf("current revision %d, but %d writes were acknowledged", rev, len(log))
	}
	last := map[sqlstore.Key]acked{}
	for _, a := range log {
		prev, seen := last[a.write.Key]
		exists := seen && prev.write.Op != sqlstore.OpDelete
		switch {
		case a.write.Op == sqlstore.OpCreate && exists:
			t.Fatalf("revision %d created %v, which existed at revision %d", a.obj.Revision, a.write.Key, prev.obj.Revision)
		case a.write.Op != sqlstore.OpCreate && (!exists || prev.obj.Revision != a.write.ExpectedRevision):
			t.Fatalf("revision %d (%v %v, expected %d) was not based on the key's previous write %+v",
				a.obj.Revision, a.write.Op, a.write.Key, a.write.ExpectedRevision, prev.obj)
		}
		last[a.write.Key] = a
	}
	var want []string
	for key, a := range last {
		got, err := s.Get(context.Background(), key)
		if a.write.Op == sqlstore.OpDelete {
			if !errors.Is(err, sqlstore.ErrNotFound) {
				t.Errorf("%v was deleted last, Get: %v", key, err)
			}
			continue
		}
		want = append(want, fmt.Sprintf("%s/%s@%d", key.Namespace, key.Name, a.obj.Revision))
		if err != nil || got.Revision != a.obj.Revision || string(got.Value) != string(a.obj.Value) {
			t.Errorf("Get(%v) = %d %s, %v; want the last acknowledged write %d %s", key, got.Revision, got.Value, err, a.obj.Revision, a.obj.Value)
		}
	}
	slices.Sort(want)
	objs, _ := listAll(t, s, sqlstore.ListOptions{Resource: "configmaps"})
	if got := revisionNames(objs); !slices.Equal(got, want) {
		t.Errorf("final list %v, want %v", got, want)
	}
}

// checkSnapshotsWhile lists while others write, until stop: each list at the latest revision
// must equal the list read again later at its revision.
func checkSnapshotsWhile(s *sqlstore.Store, stop <-chan struct{}) error {
	ctx := context.Background()
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		latest, err := collect(ctx, s, sqlstore.ListOptions{Resource: "configmaps"})
		if err != nil {
			return err
		}
		if latest.rev == 0 {
			continue // Revision 0 asks for the latest state, not for revision 0.
		}
		again, err := collect(ctx, s, sqlstore.ListOptions{Resource: "configmaps", Revision: latest.rev})
		if err != nil {
			return err
		}
		if !slices.Equal(latest.items, again.items) {
			return fmt.Errorf("list at %d: %v, read again at its revision: %v", latest.rev, latest.items, again.items)
		}
		for _, o := range latest.objs {
			if o.Revision > latest.rev {
				return fmt.Errorf("list at revision %d holds %v at %d", latest.rev, o.Key, o.Revision)
			}
		}
	}
}

type listing struct {
	rev   int64
	objs  []sqlstore.Object
	items []string
}

func collect(ctx context.Context, s *sqlstore.Store, opts sqlstore.ListOptions) (listing, error) {
	var l listing
	res, err := s.List(ctx, opts, func(o sqlstore.Object) error {
		l.objs = append(l.objs, o)
		return nil
	})
	l.rev, l.items = res.Revision, revisionNames(l.objs)
	return l, err
}

// TestBatchFailuresStayPerWrite sends, at once, many creates of the same key and many writes of
// distinct keys: exactly one create wins, the others get ErrExists, and every other write
// succeeds, whatever batches they share.
func TestBatchFailuresStayPerWrite(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		const n = 200
		results := make(chan error, 2*n)
		for i := range n {
			go func() {
				_, err := s.Write(context.Background(), sqlstore.Write{Op: sqlstore.OpCreate, Key: cm("ns", "contended"), Render: body("x")})
				results <- err
			}()
			go func() {
				_, err := s.Write(context.Background(), sqlstore.Write{Op: sqlstore.OpCreate, Key: cm("ns", fmt.Sprintf("free-%d", i)), Render: body("x")})
				if err != nil {
					err = fmt.Errorf("innocent write failed: %w", err)
				}
				results <- err
			}()
		}
		exists := 0
		for range 2 * n {
			switch err := <-results; {
			case errors.Is(err, sqlstore.ErrExists):
				exists++
			case err != nil:
				t.Error(err)
			}
		}
		if exists != n-1 {
			t.Fatalf("%d creates of one key failed with ErrExists, want %d", exists, n-1)
		}
		if rev := currentRevision(t, s); rev != n+1 {
			t.Fatalf("current revision %d, want %d", rev, n+1)
		}
	})
}

// TestCancelledWriteIsNotWritten: a write whose context has ended before it is committed is
// answered with the context's error and never stored.
func TestCancelledWriteIsNotWritten(t *testing.T) {
	s := openStore(t, sqltest.SQLiteDSN(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Write(ctx, sqlstore.Write{Op: sqlstore.OpCreate, Key: cm("ns", "a"), Render: body("x")})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Write with a cancelled context: %v", err)
	}
	if _, err := s.Get(context.Background(), cm("ns", "a")); !errors.Is(err, sqlstore.ErrNotFound) {
		t.Fatalf("cancelled write was stored: %v", err)
	}
}

// TestCancelWhileQueuedOrInBatch holds the committer inside one write's Render, so that a second
// write waits in the queue: cancelling the second answers its context's error and writes nothing;
// cancelling the first, already in its batch, does not stop it.
func TestCancelWhileQueuedOrInBatch(t *testing.T) {
	s := openStore(t, sqltest.SQLiteDSN(t))
	rendering, release := make(chan struct{}), make(chan struct{})
	firstCtx, cancelFirst := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := s.Write(firstCtx, sqlstore.Write{Op: sqlstore.OpCreate, Key: cm("ns", "first"), Render: func(rev int64) ([]byte, error) {
			close(rendering)
			<-release
			return body("first")(rev)
		}})
		first <- err
	}()
	<-rendering

	secondCtx, cancelSecond := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() {
		_, err := s.Write(secondCtx, sqlstore.Write{Op: sqlstore.OpCreate, Key: cm("ns", "second"), Render: body("second")})
		second <- err
	}()
	cancelSecond()
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Fatalf("queued write after cancel: %v", err)
	}
	cancelFirst()
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("write cancelled inside its batch: %v, want it completed", err)
	}
	if _, err := s.Get(context.Background(), cm("ns", "first")); err != nil {
		t.Fatalf("the batched write is missing: %v", err)
	}
	if _, err := s.Get(context.Background(), cm("ns", "second")); !errors.Is(err, sqlstore.ErrNotFound) {
		t.Fatalf("the cancelled write was stored: %v", err)
	}
}
