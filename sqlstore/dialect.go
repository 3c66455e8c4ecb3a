package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/sqlkube/sqlkube/dialects"
	"github.com/sqlkube/sqlkube/dialects/postgres"
	"github.com/sqlkube/sqlkube/dialects/sqlite"
	"github.com/sqlkube/sqlkube/migrations"
)

// notifyChannel is the PostgreSQL channel every write transaction notifies with its new current
// revision, so that other replicas' feeds read the log at once.
const notifyChannel = "sqlkube_revisions"

// database is an open database as the store uses it: the SQL is shared, written with '?'
// placeholders; the differences between dialects are the few fields below.
type database struct {
	name dialects.Name
	// writer runs write and compaction transactions; reader runs reads. They are one pool on
	// PostgreSQL; on SQLite the writer is a single connection.
	writer, reader *sql.DB
	// scanner runs the lists marked Bulk: reader unless the dialect has a pool for them.
	scanner *sql.DB
	// readTx makes each read transaction one consistent snapshot.
	readTx *sql.TxOptions
	// rebind turns '?' placeholders into the dialect's.
	rebind func(string) string
	// contains is the condition that a BLOB/bytea column holds the bytes of one '?' parameter.
	contains func(column string) string
	// markedIndexHint follows "objects r" in a marked list: SQLite's planner, without
	// statistics, would walk the primary key (it gives the order) rather than the small
	// partial index of marked rows.
	markedIndexHint string
	classify        func(error) dialects.Kind
	// writeBatch is a batch plan's statements: they write it and store the new current revision
	// (on PostgreSQL, also notifying other replicas of it when the transaction commits).
	writeBatch func(plan batchPlan, current int64) []statement
	// transact, when set, runs a write transaction in fewer round trips than one per statement
	// (see Store.transact); a failure once COMMIT may have run is a *commitError.
	transact func(ctx context.Context, reads []query, write func() ([]statement, error)) error
	// lockCompaction keeps compaction to one replica at a time (nil: one process owns the
	// database, and the store's own mutex is enough).
	lockCompaction func(ctx context.Context, conn *sql.Conn, wait bool) (bool, func() error, error)
	// afterCompaction, when set, is a statement run outside any transaction once a compaction
	// has removed rows, so that later writes reuse their space (PostgreSQL's VACUUM).
	afterCompaction string
	// rewrite writes the database anew without the bytes of deleted rows (CompactAll).
	rewrite func(ctx context.Context) error
	// preparedWrites is how many write statements the store prepares itself: SQLite would parse
	// them on every call; pgx keeps a statement cache of its own.
	preparedWrites int
	// checkpoint, when set, is database upkeep to run in the background (SQLite's passive WAL
	// checkpoint); it returns the WAL's length in frames.
	checkpoint func(ctx context.Context) (walFrames int64, err error)
	// restartWAL checkpoints the whole WAL so that it starts over; the committer runs it between
	// batches once the WAL has grown past walRestartFrames.
	restartWAL func(ctx context.Context) (restarted bool, err error)
	close      func() error
}

// openDatabase opens the database d names, in its dialect, and brings its schema up to date.
func openDatabase(ctx context.Context, d Database, maxConns int) (*database, error) {
	switch d.dialect {
	case dialects.SQLite:
		return openSQLite(ctx, d.address)
	case dialects.Postgres:
		return openPostgres(ctx, d.address, maxConns)
	}
	return nil, ErrNoDatabase
}

func openSQLite(ctx context.Context, path string) (*database, error) {
	migrationDB, err := sqlite.OpenForMigrations(ctx, path)
	if err != nil {
		return nil, err
	}
	if err := migrations.Up(migrationDB, migrations.SQLite); err != nil {
		return nil, fmt.Errorf("SQLite database %s: %w", path, err)
	}
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	return &database{
		name:            dialects.SQLite,
		writer:          db.Writer,
		reader:          db.Readers,
		scanner:         db.Scanners,
		readTx:          &sql.TxOptions{ReadOnly: true},
		rebind:          func(q string) string { return q },
		contains:        func(column string) string { return `instr(` + column + `, ?) > 0` },
		markedIndexHint: ` INDEXED BY objects_marked`,
		writeBatch: func(plan batchPlan, current int64) []statement {
			return append(plan.statements(), statement{sql: `UPDATE meta SET current = ? WHERE id = 1`, args: []any{current}})
		},
		classify:       sqlite.Classify,
		checkpoint:     db.Checkpoint,
		restartWAL:     db.RestartWAL,
		rewrite:        db.Rewrite,
		preparedWrites: maxCachedStatements,
		close:          db.Close,
	}, nil
}

func openPostgres(ctx context.Context, dsn string, maxConns int) (*database, error) {
	migrationDB, err := postgres.Open(ctx, dsn, 1)
	if err != nil {
		return nil, err
	}
	if err := migrations.Up(migrationDB, migrations.Postgres); err != nil {
		return nil, fmt.Errorf("PostgreSQL database: %w", err)
	}
	db, err := postgres.Open(ctx, dsn, maxConns)
	if err != nil {
		return nil, err
	}
	// Fresh statistics from the start: without them the planner may sort a whole resource for
	// one page of a list instead of reading the key index in order. Autovacuum keeps them fresh.
	if _, err := db.ExecContext(ctx, `ANALYZE objects, revisions`); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("PostgreSQL database: analyzing tables: %w", err)
	}
	return &database{
		name:    dialects.Postgres,
		writer:  db,
		reader:  db,
		scanner: db,
		// REPEATABLE READ gives the whole transaction one snapshot, so a list's revision and
		// its rows agree.
		readTx:         &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
		rebind:         postgres.Rebind,
		contains:       func(column string) string { return `position(? in ` + column + `) > 0` },
		classify:       postgres.Classify,
		writeBatch:     writeBatchUnnest,
		transact:       pipelinedTransact(db),
		lockCompaction: postgres.LockCompaction,
		// PostgreSQL reuses a deleted row's space only once VACUUM has passed; the log sheds
		// rows as fast as it grows, and autovacuum may be off or, with its default thresholds and
		// throttling, behind it: the database would grow for ever.
		afterCompaction: postgres.VacuumTables,
		rewrite: func(ctx context.Context) error {
			_, err := db.ExecContext(ctx, postgres.RewriteTables)
			return err
		},
		close: db.Close,
	}, nil
}

// pipelinedTransact runs write transactions in two round trips (postgres.Transact).
func pipelinedTransact(db *sql.DB) func(context.Context, []query, func() ([]statement, error)) error {
	return func(ctx context.Context, reads []query, write func() ([]statement, error)) error {
		pgReads := make([]postgres.Query, len(reads))
		for i, q := range reads {
			pgReads[i] = postgres.Query{SQL: postgres.Rebind(q.sql), Args: q.args, Row: q.row}
		}
		err := postgres.Transact(ctx, db, pgReads, func() ([]postgres.Query, error) {
			writes, err := write()
			pgWrites := make([]postgres.Query, len(writes))
			for i, st := range writes {
				pgWrites[i] = postgres.Query{SQL: postgres.Rebind(st.sql), Args: st.args}
			}
			return pgWrites, err
		})
		if ambiguous := (*postgres.CommitError)(nil); errors.As(err, &ambiguous) {
			return &commitError{err: ambiguous.Err}
		}
		return err
	}
}

// writeBatchUnnest is writeBatch on PostgreSQL: one statement, whose data-modifying CTEs all run
// (on disjoint rows) whether or not a row is given to them. Rows come as arrays, one per column,
// through unnest(): one statement text for any batch, which pgx prepares once per connection
// instead of spending a round trip preparing each new shape. It also sends the new current
// revision to other replicas, never the object (NOTIFY payloads are limited to 8000 bytes);
// PostgreSQL delivers it when the transaction commits.
func writeBatchUnnest(plan batchPlan, current int64) []statement {
	var logKeys, liveKeys, goneKeys keyColumns
	var revisions, ops, prevs, liveRevisions []int64
	var liveMarks []int16
	var values [][]byte
	for _, r := range plan.log {
		logKeys.add(r.Key)
		revisions, ops, prevs = append(revisions, r.Revision), append(ops, int64(r.op)), append(prevs, r.prev)
		values = append(values, r.stored)
	}
	for _, k := range plan.order {
		if i := plan.live[k]; i >= 0 {
			liveKeys.add(k)
			liveRevisions = append(liveRevisions, plan.log[i].Revision)
			liveMarks = append(liveMarks, int16(plan.log[i].marked))
		} else {
			goneKeys.add(k)
		}
	}
	return []statement{{
		sql: `WITH log AS (INSERT INTO revisions (revision, resource, namespace, name, op, prev_revision, value)
				SELECT * FROM unnest(?::bigint[], ?::text[], ?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::bytea[])),
			live AS (INSERT INTO objects (resource, namespace, name, revision, marked)
				SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::bigint[], ?::smallint[])
				ON CONFLICT (resource, namespace, name) DO UPDATE SET revision = excluded.revision, marked = excluded.marked),
			gone AS (DELETE FROM objects
				WHERE (resource, namespace, name) IN (SELECT * FROM unnest(?::text[], ?::text[], ?::text[])))
			UPDATE meta SET current = ? WHERE id = 1 RETURNING pg_notify(?, ?)`,
		args: []any{
			revisions, logKeys.resources, logKeys.namespaces, logKeys.names, ops, prevs, values,
			liveKeys.resources, liveKeys.namespaces, liveKeys.names, liveRevisions, liveMarks,
			goneKeys.resources, goneKeys.namespaces, goneKeys.names,
			current, notifyChannel, strconv.FormatInt(current, 10),
		},
	}}
}

// keyColumns are keys as one array per column, for unnest().
type keyColumns struct{ resources, namespaces, names []string }

func (c *keyColumns) add(k Key) {
	c.resources = append(c.resources, k.Resource)
	c.namespaces = append(c.namespaces, k.Namespace)
	c.names = append(c.names, k.Name)
}
