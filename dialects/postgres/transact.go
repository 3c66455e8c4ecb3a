package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/sqlkube/sqlkube/dialects"
)

// Query is one statement of a Transact, with $n placeholders. Row, when set, is called for each
// row the statement returns, with a function that scans the row's columns into dest.
type Query struct {
	SQL  string
	Args []any
	Row  func(scan func(dest ...any) error) error
}

// rollbackTimeout bounds the ROLLBACK that returns a connection to the pool clean after a failure.
const rollbackTimeout = 5 * time.Second

// Transact runs a READ COMMITTED transaction on a connection of db in two round trips, pipelining
// what database/sql would send one statement at a time: BEGIN and reads; then the statements
// write returns, given the reads' rows, and COMMIT. If write returns none, the transaction is
// rolled back. A statement sees what was committed when it started, which in a pipeline is when
// the one before it finished, so a read queued after a lock sees every transaction committed
// before the lock was granted.
//
// A failure before COMMIT leaves nothing written. A failure of COMMIT, or of the connection while
// the writes and COMMIT were on their way, is a *dialects.CommitError: the transaction may have committed.
func Transact(ctx context.Context, db *sql.DB, reads []Query, write func() ([]Query, error)) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		c := driverConn.(*stdlib.Conn).Conn()
		err := transact(ctx, c, reads, write)
		endTransaction(ctx, c)
		return err
	})
}

// customPlans makes PostgreSQL plan the transaction's statements for the tables as they are. A
// generic plan of the batch's key read, cached while the objects table was small, went on
// scanning the whole table as it grew: on a fresh database creates fell from ~8,000/s to
// ~1,800/s within a minute, until autovacuum analyzed the table.
var customPlans = Query{SQL: "SET LOCAL plan_cache_mode = force_custom_plan"}

func transact(ctx context.Context, c *pgx.Conn, reads []Query, write func() ([]Query, error)) error {
	reads = append([]Query{customPlans}, reads...)
	results := c.SendBatch(ctx, batch("BEGIN", reads, ""))
	err := readResults(results, true, reads)
	if err = closeResults(results, err); err != nil {
		return err
	}
	writes, err := write()
	if err != nil || len(writes) == 0 {
		return err
	}
	results = c.SendBatch(ctx, batch("", writes, "COMMIT"))
	err = readResults(results, false, writes)
	var refused *pgconn.PgError
	if err == nil {
		_, err = results.Exec() // COMMIT
	} else if errors.As(err, &refused) {
		// The server answered with an error before COMMIT ran (refusing a write, or ending
		// the session), and then skipped the rest.
		return closeResults(results, err)
	}
	if err = closeResults(results, err); err != nil && !pgconn.SafeToRetry(err) {
		return &dialects.CommitError{Err: err}
	}
	return err
}

// batch queues first and last (each if not empty) around queries.
func batch(first string, queries []Query, last string) *pgx.Batch {
	b := &pgx.Batch{}
	if first != "" {
		b.Queue(first)
	}
	for _, q := range queries {
		b.Queue(q.SQL, q.Args...)
	}
	if last != "" {
		b.Queue(last)
	}
	return b
}

// readResults reads the results of the batch's first statement (if skipFirst, discarding it)
// and of queries, in order, up to the first failure; the server skipped what came after it.
func readResults(results pgx.BatchResults, skipFirst bool, queries []Query) error {
	if skipFirst {
		if _, err := results.Exec(); err != nil {
			return err
		}
	}
	for _, q := range queries {
		if err := readResult(results, q); err != nil {
			return err
		}
	}
	return nil
}

// closeResults closes results and returns the batch's first failure: err, or else the close's.
func closeResults(results pgx.BatchResults, err error) error {
	closeErr := results.Close()
	if err != nil {
		return err
	}
	return closeErr
}

// readResult reads q's result, handing its rows to q.Row.
func readResult(results pgx.BatchResults, q Query) error {
	if q.Row == nil {
		_, err := results.Exec()
		return err
	}
	rows, err := results.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	return dialects.ReadRows(rows, q.Row)
}

// endTransaction rolls back what a failure or an empty write left open, so that the connection
// goes back to the pool outside any transaction; one it cannot roll back, database/sql discards.
func endTransaction(ctx context.Context, c *pgx.Conn) {
	if c.IsClosed() || c.PgConn().TxStatus() == 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	_, _ = c.Exec(ctx, "ROLLBACK")
}
