package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"github.com/sqlkube/sqlkube/dialects"
	"github.com/sqlkube/sqlkube/migrations"
)

// OpenDatabase connects to the database dsn names with a pool of at most maxConns connections
// (DefaultMaxConns if 0), brings its schema up to date, and returns it as sqlstore uses it.
func OpenDatabase(ctx context.Context, dsn string, maxConns int) (*dialects.Database, error) {
	migrationDB, err := Open(ctx, dsn, 1)
	if err != nil {
		return nil, err
	}
	if err := migrations.Up(migrationDB, migrations.Postgres); err != nil {
		return nil, fmt.Errorf("PostgreSQL database: %w", err)
	}
	db, err := Open(ctx, dsn, maxConns)
	if err != nil {
		return nil, err
	}
	// Fresh statistics from the start: without them the planner may sort a whole resource for
	// one page of a list instead of reading the key index in order. Autovacuum keeps them fresh.
	if _, err := db.ExecContext(ctx, `ANALYZE objects, revisions`); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("PostgreSQL database: analyzing tables: %w", err)
	}
	return &dialects.Database{
		Name:    dialects.Postgres,
		Writer:  db,
		Reader:  db,
		Scanner: db,
		// REPEATABLE READ gives the whole transaction one snapshot, so a list's revision and
		// its rows agree.
		ReadTx:         &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
		Rebind:         Rebind,
		Contains:       func(column string) string { return `position(? in ` + column + `) > 0` },
		Classify:       Classify,
		WriteBatch:     writeBatchUnnest,
		Transact:       reboundTransact(db),
		LockCompaction: LockCompaction,
		// PostgreSQL reuses a deleted row's space only once VACUUM has passed; the log sheds
		// rows as fast as it grows, and autovacuum may be off or, with its default thresholds and
		// throttling, behind it: the database would grow for ever.
		AfterCompaction: VacuumTables,
		Rewrite: func(ctx context.Context) error {
			_, err := db.ExecContext(ctx, RewriteTables)
			return err
		},
		// pgx keeps a statement cache of its own: the writes need no preparing.
		Close: db.Close,
	}, nil
}

// reboundTransact runs write transactions of '?' statements in two round trips (Transact).
func reboundTransact(db *sql.DB) func(context.Context, []dialects.Statement, func() ([]dialects.Statement, error)) error {
	rebound := func(statements []dialects.Statement) []Query {
		queries := make([]Query, len(statements))
		for i, st := range statements {
			queries[i] = Query{SQL: Rebind(st.SQL), Args: st.Args, Row: st.Row}
		}
		return queries
	}
	return func(ctx context.Context, reads []dialects.Statement, write func() ([]dialects.Statement, error)) error {
		return Transact(ctx, db, rebound(reads), func() ([]Query, error) {
			writes, err := write()
			return rebound(writes), err
		})
	}
}

// writeBatchUnnest is WriteBatch on PostgreSQL: one statement, whose data-modifying CTEs all run
// (on disjoint rows) whether or not a row is given to them. Rows come as arrays, one per column,
// through unnest(): one statement text for any batch, which pgx prepares once per connection
// instead of spending a round trip preparing each new shape. It also sends the new current
// revision to other replicas, never the object (NOTIFY payloads are limited to 8000 bytes);
// PostgreSQL delivers it when the transaction commits.
func writeBatchUnnest(b dialects.Batch, current int64) []dialects.Statement {
	var logKeys, liveKeys, goneKeys keyColumns
	var revisions, ops, prevs, liveRevisions []int64
	var liveMarks []int16
	var values [][]byte
	for _, r := range b.Log {
		logKeys.add(r.Key)
		revisions, ops, prevs = append(revisions, r.Revision), append(ops, r.Op), append(prevs, r.Prev)
		values = append(values, r.Value)
	}
	for _, r := range b.Live {
		liveKeys.add(r.Key)
		liveRevisions, liveMarks = append(liveRevisions, r.Revision), append(liveMarks, int16(r.Marked))
	}
	for _, k := range b.Gone {
		goneKeys.add(k)
	}
	return []dialects.Statement{{
		SQL: `WITH log AS (INSERT INTO revisions (revision, resource, namespace, name, op, prev_revision, value)
				SELECT * FROM unnest(?::bigint[], ?::text[], ?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::bytea[])),
			live AS (INSERT INTO objects (resource, namespace, name, revision, marked)
				SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::bigint[], ?::smallint[])
				ON CONFLICT (resource, namespace, name) DO UPDATE SET revision = excluded.revision, marked = excluded.marked),
			gone AS (DELETE FROM objects
				WHERE (resource, namespace, name) IN (SELECT * FROM unnest(?::text[], ?::text[], ?::text[])))
			UPDATE meta SET current = ? WHERE id = 1 RETURNING pg_notify(?, ?)`,
		Args: []any{
			revisions, logKeys.resources, logKeys.namespaces, logKeys.names, ops, prevs, values,
			liveKeys.resources, liveKeys.namespaces, liveKeys.names, liveRevisions, liveMarks,
			goneKeys.resources, goneKeys.namespaces, goneKeys.names,
			current, dialects.NotifyChannel, strconv.FormatInt(current, 10),
		},
	}}
}

// keyColumns are keys as one array per column, for unnest().
type keyColumns struct{ resources, namespaces, names []string }

func (c *keyColumns) add(k dialects.Key) {
	c.resources = append(c.resources, k.Resource)
	c.namespaces = append(c.namespaces, k.Namespace)
	c.names = append(c.names, k.Name)
}
