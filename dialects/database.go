package dialects

import (
	"context"
	"database/sql"
	"strings"
)

// Database is an open database as sqlstore uses it, built by its dialect's package
// (sqlite.OpenDatabase, postgres.OpenDatabase) with its schema up to date. The store's SQL is
// shared, written with '?' placeholders; the differences between dialects are the fields below.
// Fields documented as optional are nil or empty when the dialect has no use for them.
type Database struct {
	Name Name
	// Writer runs write and compaction transactions; Reader runs reads. They are one pool on
	// PostgreSQL; on SQLite the writer is a single connection.
	Writer, Reader *sql.DB
	// Scanner runs bulk reads: Reader unless the dialect has a pool for them.
	Scanner *sql.DB
	// ReadTx makes each read transaction one consistent snapshot.
	ReadTx *sql.TxOptions
	// Rebind turns '?' placeholders into the dialect's.
	Rebind func(string) string
	// Contains is the condition that a BLOB/bytea column holds the bytes of one '?' parameter.
	Contains func(column string) string
	// MarkedIndexHint follows "objects r" in a list of marked rows (optional).
	MarkedIndexHint string
	// Classify says what a driver error means.
	Classify func(error) Kind
	// WriteBatch is the statements that write b and store current as the current revision (on
	// PostgreSQL, also notifying NotifyChannel of it when the transaction commits).
	WriteBatch func(b Batch, current int64) []Statement
	// Transact runs a write transaction on Writer: reads, then the statements write returns (none:
	// the transaction ends without writing), then COMMIT. A failure once COMMIT may have run is a
	// *CommitError: the transaction may have committed, so it must not be run again.
	Transact func(ctx context.Context, reads []Statement, write func() ([]Statement, error)) error
	// PrepareWrites (optional) prepares the statements Transact ran unprepared, for next time. Call
	// it outside any transaction, off the writes' path.
	PrepareWrites func(ctx context.Context) error
	// LockCompaction (optional) keeps compaction to one replica at a time, by a lock held on conn
	// until unlock; with wait false it returns false at once if another replica holds it. Without
	// it one process owns the database.
	LockCompaction func(ctx context.Context, conn *sql.Conn, wait bool) (locked bool, unlock func() error, err error)
	// AfterCompaction (optional) is a statement run outside any transaction once a compaction has
	// removed rows, so that later writes reuse their space.
	AfterCompaction string
	// Rewrite writes the database anew without the bytes of deleted rows.
	Rewrite func(ctx context.Context) error
	// Checkpoint (optional) is database upkeep to run in the background; it returns the length
	// of SQLite's WAL in frames.
	Checkpoint func(ctx context.Context) (walFrames int64, err error)
	// RestartWAL (optional with Checkpoint) checkpoints the whole WAL so that it starts over;
	// run it between write transactions.
	RestartWAL func(ctx context.Context) (restarted bool, err error)
	// Close closes the pools and what was prepared on them.
	Close func() error
}

// NotifyChannel is the PostgreSQL channel every write transaction notifies with its new current
// revision, so that other replicas' change feeds read the log at once.
const NotifyChannel = "sqlkube_revisions"

// Statement is one SQL statement, with '?' placeholders, and its arguments. Row, when set, is
// called for each row the statement returns, with a function that scans the row's columns into
// dest.
type Statement struct {
	SQL  string
	Args []any
	Row  func(scan func(dest ...any) error) error
}

// Rows are a statement's result rows: *sql.Rows, pgx.Rows.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ReadRows hands each of rows to row and returns the first failure, row's or the rows'. The
// caller closes rows.
func ReadRows(rows Rows, row func(scan func(dest ...any) error) error) error {
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Key names a row of the objects table.
type Key struct{ Resource, Namespace, Name string }

// LogRow is one row of the revisions table: Op is the write's (create, update, delete), Prev the
// revision it replaced (0: none), Value the bytes as the database keeps them.
type LogRow struct {
	Key
	Revision, Op, Prev int64
	Value              []byte
}

// LiveRow is the row of the objects table of a key that exists: Marked is 1 when the store's
// Mark picked the value, else 0.
type LiveRow struct {
	Key
	Revision int64
	Marked   int
}

// Batch is what one write transaction stores: its log rows, in revision order, and the final
// state of each key it changed, in first-write order (so statements are deterministic): a live
// row, or Gone for the keys it deleted.
type Batch struct {
	Log  []LogRow
	Live []LiveRow
	Gone []Key
}

// CommitError is a failure once COMMIT was sent, where the transaction may have been committed.
type CommitError struct{ Err error }

func (e *CommitError) Error() string { return "commit: " + e.Err.Error() }
func (e *CommitError) Unwrap() error { return e.Err }

// Placeholders renders "(?, ?), (?, ?)" for rows rows (at least one) of width placeholders.
func Placeholders(rows, width int) string {
	row := "(" + strings.Repeat("?, ", width-1) + "?)"
	return strings.Repeat(row+", ", rows-1) + row
}
