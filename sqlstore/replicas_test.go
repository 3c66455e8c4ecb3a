package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// TestReplicasShareOneRevisionLine runs two stores on one PostgreSQL database, as two server
// replicas: a write acknowledged by one is seen at once by the other, concurrent writes through
// both get gapless revisions, and both may compact at the same time.
func TestReplicasShareOneRevisionLine(t *testing.T) {
	dsn := sqltest.PostgresDSN(t)
	a, b := openStore(t, dsn), openStore(t, dsn)
	ctx := context.Background()

	for i := range 20 {
		key := cm("ns", fmt.Sprintf("seen-%d", i))
		written := create(t, a, key, "x")
		got, err := b.Get(ctx, key)
		if err != nil || got.Revision != written.Revision {
			t.Fatalf("replica B reads %v right after A wrote it at %d: %+v, %v", key, written.Revision, got, err)
		}
		objs, res := listAll(t, b, sqlstore.ListOptions{Resource: "configmaps"})
		if res.Revision != written.Revision || len(objs) != i+1 {
			t.Fatalf("replica B lists %d objects at %d right after A wrote %d", len(objs), res.Revision, written.Revision)
		}
	}

	var wg sync.WaitGroup
	revisions := make(chan int64, 400)
	for r, s := range []*sqlstore.Store{a, b} {
		for g := range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 20 {
					obj, err := s.Write(ctx, sqlstore.Write{Op: sqlstore.OpCreate, Key: cm("ns", fmt.Sprintf("r%d-g%d-%d", r, g, i)), Render: body("x")})
					if err != nil {
						t.Error(err)
						return
					}
					revisions <- obj.Revision
				}
			}()
		}
	}
	wg.Wait()
	close(revisions)
	seen := map[int64]bool{}
	for rev := range revisions {
		if seen[rev] || rev <= 20 || rev > 420 {
			t.Fatalf("revision %d given twice or out of 21..420", rev)
		}
		seen[rev] = true
	}
	if len(seen) != 400 {
		t.Fatalf("%d distinct revisions for 400 writes", len(seen))
	}

	errs := make(chan error, 2)
	for _, s := range []*sqlstore.Store{a, b} {
		go func() { errs <- s.Compact(ctx, 400) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent Compact: %v", err)
		}
	}
	objs, _ := listAll(t, b, sqlstore.ListOptions{Resource: "configmaps", Revision: 400})
	if len(objs) != 400 {
		t.Fatalf("list at the compacted revision: %d objects, want 400", len(objs))
	}
}

// TestPostgresConnectionsLost ends every connection of the store's database, as a PostgreSQL
// restart does: requests fail with ErrUnavailable (or succeed) rather than hang, and the store
// recovers by itself.
func TestPostgresConnectionsLost(t *testing.T) {
	dsn := sqltest.PostgresDSN(t)
	s := openStore(t, dsn)
	ctx := context.Background()
	rev := create(t, s, cm("ns", "a"), "x").Revision
	execRaw(t, dsn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")

	recovered := false
	for i := range 20 {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		obj, err := s.Write(ctx, sqlstore.Write{Op: sqlstore.OpUpdate, Key: cm("ns", "a"), ExpectedRevision: rev, Render: body(fmt.Sprint(i))})
		cancel()
		if err == nil {
			rev, recovered = obj.Revision, true
			break
		}
		if !errors.Is(err, sqlstore.ErrUnavailable) {
			t.Fatalf("write after the connections were lost: %v, want success or ErrUnavailable", err)
		}
	}
	if !recovered {
		t.Fatal("the store did not recover from lost connections")
	}
	// A read may still draw a pooled connection whose backend was ended: it fails as unavailable
	// too, and the next read takes another connection.
	for attempt := 1; ; attempt++ {
		got, err := s.Get(ctx, cm("ns", "a"))
		if err == nil {
			if got.Revision != rev {
				t.Fatalf("Get after recovery: revision %d, want %d", got.Revision, rev)
			}
			return
		}
		if !errors.Is(err, sqlstore.ErrUnavailable) || attempt == 20 {
			t.Fatalf("Get after recovery (attempt %d): %v, want success or ErrUnavailable", attempt, err)
		}
	}
}

// TestReplicasOneWinnerPerPrecondition races, through two stores on one database, creates of
// one key and then updates of it from the same revision: each time exactly one write wins,
// however the replicas' batches interleave, because each batch reads its keys only once it holds
// the counter lock.
func TestReplicasOneWinnerPerPrecondition(t *testing.T) {
	dsn := sqltest.PostgresDSN(t)
	stores := []*sqlstore.Store{openStore(t, dsn), openStore(t, dsn)}
	ctx := context.Background()
	const rounds, writersPerStore = 30, 8
	race := func(w sqlstore.Write, lost error) sqlstore.Object {
		t.Helper()
		results := make(chan error, len(stores)*writersPerStore)
		won := make(chan sqlstore.Object, len(stores)*writersPerStore)
		start := make(chan struct{})
		for _, s := range stores {
			for range writersPerStore {
				go func() {
					<-start
					obj, err := s.Write(ctx, w)
					if err == nil {
						won <- obj
					}
					results <- err
				}()
			}
		}
		close(start)
		for range len(stores) * writersPerStore {
			if err := <-results; err != nil && !errors.Is(err, lost) {
				t.Fatalf("%v of %v: %v, want success or %v", w.Op, w.Key, err, lost)
			}
		}
		if len(won) != 1 {
			t.Fatalf("%d writes won the race to %v %v, want 1", len(won), w.Op, w.Key)
		}
		return <-won
	}
	for i := range rounds {
		key := cm("ns", fmt.Sprint("contended-", i))
		created := race(sqlstore.Write{Op: sqlstore.OpCreate, Key: key, Render: body("x")}, sqlstore.ErrExists)
		race(sqlstore.Write{Op: sqlstore.OpUpdate, Key: key, ExpectedRevision: created.Revision, Render: body("y")}, sqlstore.ErrConflict)
	}
}
