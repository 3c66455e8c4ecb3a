package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/sqlkube/sqlkube/dialects"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// TestBrokenWriteFailsAlone makes the database reject every transaction that holds one
// "poison" write: the writes batched with it still succeed, and only it fails.
func TestBrokenWriteFailsAlone(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		s, err := Open(context.Background(), sqltest.Database(t, dsn, SQLite, Postgres), Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		poison := Key{Resource: "r", Namespace: "ns", Name: "poison"}
		writeBatch := s.db.WriteBatch
		s.db.WriteBatch = func(b dialects.Batch, current int64) []dialects.Statement {
			statements := writeBatch(b, current)
			if slices.ContainsFunc(b.Live, func(r dialects.LiveRow) bool { return r.Key == dialects.Key(poison) }) {
				statements = append(statements, dialects.Statement{SQL: `INSERT INTO no_such_table VALUES (1)`})
			}
			return statements
		}

		const n = 100
		errs := make(chan error, n+1)
		write := func(key Key) {
			_, err := s.Write(context.Background(), Write{Op: OpCreate, Key: key,
				Render: func(int64) ([]byte, error) { return []byte("{}"), nil }})
			errs <- err
		}
		for i := range n {
			go write(Key{Resource: "r", Namespace: "ns", Name: fmt.Sprint("innocent-", i)})
			if i == n/2 {
				go write(poison)
			}
		}
		failed := 0
		for range n + 1 {
			if err := <-errs; err != nil {
				failed++
				if errors.Is(err, ErrConflict) || errors.Is(err, ErrExists) {
					t.Errorf("unexpected error %v", err)
				}
			}
		}
		if failed != 1 {
			t.Fatalf("%d writes failed, want only the poisoned one", failed)
		}
		if _, err := s.Get(context.Background(), poison); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the poisoned write was stored: %v", err)
		}
		if current, _ := s.CurrentRevision(context.Background()); current != n {
			t.Fatalf("current revision %d, want %d", current, n)
		}
	})
}

// untransformed keeps values as they are.
func untransformed(_ context.Context, _ Key, value []byte) ([]byte, error) { return value, nil }

// TestPlanBatchStopsAtByteBound: a batch takes no further write once its rendered bytes reach
// maxBatchBytes; the rest wait for the next batch.
func TestPlanBatchStopsAtByteBound(t *testing.T) {
	mib := make([]byte, 1<<20)
	var batch []*pendingWrite
	for i := range 6 {
		batch = append(batch, &pendingWrite{write: Write{Op: OpCreate, Key: Key{"r", "ns", fmt.Sprint(i)},
			Render: func(int64) ([]byte, error) { return mib, nil }}})
	}
	plan := planBatch(context.Background(), batch, map[Key]int64{}, 10, untransformed)
	if len(plan.results) != 4 || len(plan.log) != 4 || plan.log[3].Revision != 14 {
		t.Fatalf("planned %d writes (%d log rows), want the 4 that fill %d bytes", len(plan.results), len(plan.log), maxBatchBytes)
	}
}

// TestPlanBatchChecksAgainstEarlierWrites: each write's precondition sees the writes before it
// in the same batch, and failed ones take no revision.
func TestPlanBatchChecksAgainstEarlierWrites(t *testing.T) {
	k := Key{"r", "ns", "a"}
	render := func(rev int64) ([]byte, error) { return fmt.Appendf(nil, "%d", rev), nil }
	batch := []*pendingWrite{
		{write: Write{Op: OpCreate, Key: k, Render: render}},                      // 6
		{write: Write{Op: OpCreate, Key: k, Render: render}},                      // exists
		{write: Write{Op: OpUpdate, Key: k, ExpectedRevision: 5, Render: render}}, // conflict
		{write: Write{Op: OpUpdate, Key: k, ExpectedRevision: 6, Render: render}}, // 7
		{write: Write{Op: OpDelete, Key: k, ExpectedRevision: 7, Render: render}}, // 8
		{write: Write{Op: OpDelete, Key: k, ExpectedRevision: 8, Render: render}}, // not found
		{write: Write{Op: OpCreate, Key: k, Render: render}},                      // 9
	}
	plan := planBatch(context.Background(), batch, map[Key]int64{}, 5, untransformed)
	want := []error{nil, ErrExists, ErrConflict, nil, nil, ErrNotFound, nil}
	for i, r := range plan.results {
		if !errors.Is(r.err, want[i]) || (r.err != nil) != (want[i] != nil) {
			t.Errorf("write %d: %v, want %v", i, r.err, want[i])
		}
	}
	var revs, prevs []int64
	for _, row := range plan.log {
		revs, prevs = append(revs, row.Revision), append(prevs, row.prev)
	}
	if fmt.Sprint(revs, prevs) != "[6 7 8 9] [0 6 7 0]" {
		t.Fatalf("log revisions %v, previous revisions %v", revs, prevs)
	}
	if i := plan.live[k]; plan.log[i].Revision != 9 {
		t.Fatalf("final live state at %d, want 9", plan.log[i].Revision)
	}
}
