package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// TestBrokenWriteFailsAlone makes the database reject every transaction that holds one
// "poison" write: the writes batched with it still succeed, and only it fails.
func TestBrokenWriteFailsAlone(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		s, err := Open(context.Background(), Options{DSN: dsn})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		poison := Key{Resource: "r", Namespace: "ns", Name: "poison"}
		batchStatements := s.db.batchStatements
		s.db.batchStatements = func(statements []statement) []statement {
			for _, arg := range statements[0].args {
				if arg == poison.Name {
					statements = append(statements, statement{sql: `INSERT INTO no_such_table VALUES (1)`})
				}
			}
			return batchStatements(statements)
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
