package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sqlkube/sqlkube/dialects"
	"github.com/sqlkube/sqlkube/migrations"
)

// OpenDatabase opens (creating if needed) the database file at path, brings its schema up to
// date, and returns it as sqlstore uses it.
func OpenDatabase(ctx context.Context, path string) (*dialects.Database, error) {
	migrationDB, err := OpenForMigrations(ctx, path)
	if err != nil {
		return nil, err
	}
	if err := migrations.Up(migrationDB, migrations.SQLite); err != nil {
		return nil, fmt.Errorf("SQLite database %s: %w", path, err)
	}
	db, err := Open(ctx, path)
	if err != nil {
		return nil, err
	}
	// SQLite would parse the write statements on every call: the store prepares them itself.
	writes := newStmtCache(db.Writer, maxCachedStatements)
	return &dialects.Database{
		Name:     dialects.SQLite,
		Writer:   db.Writer,
		Reader:   db.Readers,
		Scanner:  db.Scanners,
		ReadTx:   &sql.TxOptions{ReadOnly: true},
		Rebind:   func(q string) string { return q },
		Contains: func(column string) string { return `instr(` + column + `, ?) > 0` },
		// SQLite's planner, without statistics, would walk the primary key (it gives the order)
		// rather than the small partial index of marked rows.
		MarkedIndexHint: ` INDEXED BY objects_marked`,
		Classify:        Classify,
		WriteBatch: func(b dialects.Batch, current int64) []dialects.Statement {
			return append(batchStatements(b), dialects.Statement{SQL: `UPDATE meta SET current = ? WHERE id = 1`, Args: []any{current}})
		},
		Transact:      writes.transact,
		PrepareWrites: writes.prepare,
		Checkpoint:    db.Checkpoint,
		RestartWAL:    db.RestartWAL,
		Rewrite:       db.Rewrite,
		Close:         func() error { return errors.Join(writes.close(), db.Close()) },
	}, nil
}

// transact runs a write transaction one statement at a time (the writer is local: round trips
// cost little), preparing the statements it can.
func (c *stmtCache) transact(ctx context.Context, reads []dialects.Statement, write func() ([]dialects.Statement, error)) error {
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range reads {
		if err := c.readRows(ctx, tx, q); err != nil {
			return err
		}
	}
	writes, err := write()
	if err != nil || len(writes) == 0 {
		return err
	}
	for _, st := range writes {
		if err := c.exec(ctx, tx, st.SQL, st.Args...); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return &dialects.CommitError{Err: err}
	}
	return nil
}

// readRows runs q in tx and hands its rows to q.Row.
func (c *stmtCache) readRows(ctx context.Context, tx *sql.Tx, q dialects.Statement) error {
	rows, err := c.query(ctx, tx, q.SQL, q.Args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := dialects.ReadRows(rows, q.Row); err != nil {
		return err
	}
	return rows.Close()
}

// batchStatements inserts the log rows and brings the live set to the batch's final state of each
// key: one upsert for the keys that exist after the batch, one delete for those that do not.
func batchStatements(b dialects.Batch) []dialects.Statement {
	log := dialects.Statement{SQL: `INSERT INTO revisions (revision, resource, namespace, name, op, prev_revision, value) VALUES ` +
		dialects.Placeholders(len(b.Log), 7)}
	for _, r := range b.Log {
		log.Args = append(log.Args, r.Revision, r.Resource, r.Namespace, r.Name, r.Op, r.Prev, r.Value)
	}
	statements := []dialects.Statement{log}
	if len(b.Live) > 0 {
		upsert := dialects.Statement{SQL: `INSERT INTO objects (resource, namespace, name, revision, marked) VALUES ` +
			dialects.Placeholders(len(b.Live), 5) +
			` ON CONFLICT (resource, namespace, name) DO UPDATE SET revision = excluded.revision, marked = excluded.marked`}
		for _, r := range b.Live {
			upsert.Args = append(upsert.Args, r.Resource, r.Namespace, r.Name, r.Revision, r.Marked)
		}
		statements = append(statements, upsert)
	}
	if len(b.Gone) > 0 {
		del := dialects.Statement{SQL: `DELETE FROM objects WHERE (resource, namespace, name) IN (VALUES ` +
			dialects.Placeholders(len(b.Gone), 3) + `)`}
		for _, k := range b.Gone {
			del.Args = append(del.Args, k.Resource, k.Namespace, k.Name)
		}
		statements = append(statements, del)
	}
	return statements
}
