package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/sqlkube/sqlkube/dialects"
	"github.com/sqlkube/sqlkube/dialects/postgres"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// openOne opens a fresh database with a table t on a pool of one connection, so that each
// Transact reuses the connection the one before it left.
func openOne(t *testing.T) *sql.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), sqltest.PostgresDSN(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	exec(t, db, `CREATE TABLE t (k INT PRIMARY KEY, v TEXT NOT NULL)`)
	exec(t, db, `CREATE TABLE deferred (k INT UNIQUE DEFERRABLE INITIALLY DEFERRED)`)
	return db
}

func exec(t *testing.T, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func count(t *testing.T, db *sql.DB, table string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// insert is a Transact write callback that inserts rows of t.
func insert(keys ...int) func() ([]postgres.Query, error) {
	return func() ([]postgres.Query, error) {
		var writes []postgres.Query
		for _, k := range keys {
			writes = append(writes, postgres.Query{SQL: `INSERT INTO t VALUES ($1, 'x')`, Args: []any{k}})
		}
		return writes, nil
	}
}

// TestTransactReadsThenWrites: the write callback runs after the reads' rows were handed over,
// and what it returns is committed.
func TestTransactReadsThenWrites(t *testing.T) {
	db := openOne(t)
	exec(t, db, `INSERT INTO t VALUES (1, 'a'), (2, 'b')`)
	var read []string
	reads := []postgres.Query{{
		SQL:  `SELECT v FROM t WHERE k >= $1 ORDER BY k`,
		Args: []any{1},
		Row: func(scan func(...any) error) error {
			var v string
			err := scan(&v)
			read = append(read, v)
			return err
		},
	}}
	err := postgres.Transact(context.Background(), db, reads, func() ([]postgres.Query, error) {
		if len(read) != 2 {
			t.Errorf("write called after reading %q, want both rows", read)
		}
		return insert(3)()
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, "t"); n != 3 {
		t.Fatalf("%d rows after the transaction, want 3", n)
	}
}

// TestTransactWithoutWritesRollsBack: when write returns nothing, what the reads changed is
// rolled back and the connection is left ready for the next transaction.
func TestTransactWithoutWritesRollsBack(t *testing.T) {
	db := openOne(t)
	reads := []postgres.Query{{SQL: `INSERT INTO t VALUES (1, 'a')`}}
	if err := postgres.Transact(context.Background(), db, reads, insert()); err != nil {
		t.Fatal(err)
	}
	if err := postgres.Transact(context.Background(), db, nil, insert(2)); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, "t"); n != 1 {
		t.Fatalf("%d rows, want only the second transaction's", n)
	}
}

// TestTransactRefusedWrite: a write the server refuses (here a unique violation) fails the
// transaction before COMMIT, so the error is the server's, not a *CommitError, and nothing is
// written; the connection is usable afterwards.
func TestTransactRefusedWrite(t *testing.T) {
	db := openOne(t)
	exec(t, db, `INSERT INTO t VALUES (1, 'a')`)
	err := postgres.Transact(context.Background(), db, nil, insert(2, 1))
	var commitErr *dialects.CommitError
	if postgres.Classify(err) != dialects.UniqueViolation || errors.As(err, &commitErr) {
		t.Fatalf("refused write: %v, want a unique violation that is not a commit error", err)
	}
	if err := postgres.Transact(context.Background(), db, nil, insert(3)); err != nil {
		t.Fatalf("transaction after a refused write: %v", err)
	}
	if n := count(t, db, "t"); n != 2 {
		t.Fatalf("%d rows, want 2 (the refused transaction wrote nothing)", n)
	}
}

// TestTransactFailedCommit: a failure of COMMIT itself (here a deferred constraint) is a
// *CommitError.
func TestTransactFailedCommit(t *testing.T) {
	db := openOne(t)
	err := postgres.Transact(context.Background(), db, nil, func() ([]postgres.Query, error) {
		return []postgres.Query{{SQL: `INSERT INTO deferred VALUES (1), (1)`}}, nil
	})
	var commitErr *dialects.CommitError
	if !errors.As(err, &commitErr) || postgres.Classify(err) != dialects.UniqueViolation {
		t.Fatalf("failed COMMIT: %v, want a *CommitError for a unique violation", err)
	}
	if err := postgres.Transact(context.Background(), db, nil, insert(1)); err != nil {
		t.Fatalf("transaction after a failed commit: %v", err)
	}
}

// TestTransactBackendKilled ends the transaction's backend before the first round trip (a
// pooled connection that a restart broke) and between the two: either way the error says the
// database is unavailable, nothing is written, and the next transaction gets a new connection.
func TestTransactBackendKilled(t *testing.T) {
	db := openOne(t)
	admin, err := postgres.Open(context.Background(), sqltest.PostgresDSN(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var pid int
	backend := postgres.Query{SQL: `SELECT pg_backend_pid()`, Row: func(scan func(...any) error) error { return scan(&pid) }}
	kill := func() {
		t.Helper()
		// The timeout makes pg_terminate_backend wait until the backend is gone.
		exec(t, admin, `SELECT pg_terminate_backend($1, 10000)`, pid)
	}
	if err := postgres.Transact(context.Background(), db, []postgres.Query{backend}, insert()); err != nil {
		t.Fatal(err)
	}
	kill()
	err = postgres.Transact(context.Background(), db, nil, insert(1))
	var commitErr *dialects.CommitError
	if postgres.Classify(err) != dialects.Unavailable || errors.As(err, &commitErr) {
		t.Fatalf("transaction on a killed connection: %v, want unavailable before COMMIT", err)
	}

	err = postgres.Transact(context.Background(), db, []postgres.Query{backend}, func() ([]postgres.Query, error) {
		kill()
		return insert(2)()
	})
	// Whether the error is the server's farewell (57P01, sent before it read the writes) or
	// the lost connection (a *CommitError: the writes and COMMIT went out together), it says
	// that the database is unavailable.
	if postgres.Classify(err) != dialects.Unavailable {
		t.Fatalf("transaction whose backend died between round trips: %v, want unavailable", err)
	}
	if err := postgres.Transact(context.Background(), db, nil, insert(3)); err != nil {
		t.Fatalf("transaction after lost connections: %v", err)
	}
	if n := count(t, db, "t"); n != 1 {
		t.Fatalf("%d rows, want only the last transaction's", n)
	}
}

// TestTransactPlansForCurrentTables: statements in the transaction are planned anew, for the
// tables as they are, and the setting ends with the transaction.
func TestTransactPlansForCurrentTables(t *testing.T) {
	db := openOne(t)
	var mode string
	reads := []postgres.Query{{
		SQL: `SHOW plan_cache_mode`,
		Row: func(scan func(...any) error) error { return scan(&mode) },
	}}
	if err := postgres.Transact(context.Background(), db, reads, insert(1)); err != nil {
		t.Fatal(err)
	}
	if mode != "force_custom_plan" {
		t.Errorf("plan_cache_mode in the transaction = %q, want force_custom_plan", mode)
	}
	if err := db.QueryRow(`SHOW plan_cache_mode`).Scan(&mode); err != nil || mode != "auto" {
		t.Errorf("plan_cache_mode after the transaction = %q, %v; want auto", mode, err)
	}
}
