package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/sqlkube/sqlkube/dialects"
)

// SnapshotHeader describes a snapshot: every object that existed at Revision, and nothing else.
type SnapshotHeader struct {
	// Revision is the store's current revision when the snapshot was read; every object's
	// revision is at or below it.
	Revision int64
	// Objects is how many objects the snapshot holds.
	Objects int64
}

// SnapshotObject is one object of a snapshot: its latest stored version and whether the store's
// Mark picked it when it was written (restored as it was, so that marked lists keep working
// without running Mark again).
type SnapshotObject struct {
	Object
	Marked bool
}

// Snapshot reads every object of one consistent snapshot of the database, while writers go on:
// it calls header once, then each for every object, in (resource, namespace, name) byte order,
// streaming them from one read transaction (a WAL snapshot on SQLite, a REPEATABLE READ
// transaction on PostgreSQL). Objects are read with their values as the database keeps them:
// the Transformer is not applied, so encrypted values stay encrypted. The history (older versions
// and deletes) is not read. An error from header or each stops the snapshot and is returned.
func (s *Store) Snapshot(ctx context.Context, header func(SnapshotHeader) error, each func(SnapshotObject) error) error {
	// The scanners keep no memory map or large cache: a snapshot reads every row once.
	tx, err := s.db.Scanner.BeginTx(ctx, s.db.ReadTx)
	if err != nil {
		return s.dbError(ctx, "starting a snapshot", err)
	}
	defer tx.Rollback()
	// The first statement fixes the transaction's snapshot: the revision and rows agree.
	current, _, err := s.readMetaIn(ctx, tx, s.db.Scanner != s.db.Reader)
	if err != nil {
		return err
	}
	h := SnapshotHeader{Revision: current}
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM objects`).Scan(&h.Objects); err != nil {
		return s.dbError(ctx, "counting objects for a snapshot", err)
	}
	if err := header(h); err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, `SELECT o.resource, o.namespace, o.name, o.revision, o.marked, r.value`+
		` FROM objects o JOIN revisions r ON r.revision = o.revision ORDER BY o.resource, o.namespace, o.name`)
	if err != nil {
		return s.dbError(ctx, "reading a snapshot", err)
	}
	defer rows.Close()
	read := int64(0)
	for rows.Next() {
		var obj SnapshotObject
		var marked int
		if err := rows.Scan(&obj.Resource, &obj.Namespace, &obj.Name, &obj.Revision, &marked, &obj.Value); err != nil {
			return s.dbError(ctx, "reading a snapshot", err)
		}
		obj.Marked = marked == 1
		if err := each(obj); err != nil {
			return err
		}
		read++
	}
	if err := closeRows(rows); err != nil {
		return s.dbError(ctx, "reading a snapshot", err)
	}
	if read != h.Objects {
		return fmt.Errorf("sqlstore: snapshot read %d objects, counted %d in the same transaction", read, h.Objects)
	}
	return nil
}

// NotEmptyError: Restore's target database already has writes.
type NotEmptyError struct {
	Current int64
}

func (e *NotEmptyError) Error() string {
	return fmt.Sprintf("sqlstore: the target database is not empty (current revision %d): restore needs a new, empty database", e.Current)
}

// restoreChunk is how many objects one INSERT of a restore carries: few statements, and a
// bounded number of parameters (7 per row, far under SQLite's and PostgreSQL's limits).
const restoreChunk = 500

// Restore writes a snapshot into the empty database d names (creating its schema first), in one
// transaction: either the whole snapshot is restored or nothing is. header is the snapshot's
// header; objects calls its argument for every object of the snapshot, in turn, and returns the
// first error (its own or its argument's). Restore fails with *NotEmptyError, writing nothing,
// if the database has ever been written to.
//
// Every object keeps its revision and value, as the database keeps it (the Transformer is not
// applied: a store reading it needs the Transformer the snapshot's values were written with); the current revision becomes header.Revision, so
// later writes get higher revisions, and so does the compacted revision: the history before the
// snapshot is not in it, and reads or watches from older revisions fail with *CompactedError.
// No store may have the database open during Restore.
func Restore(ctx context.Context, d Database, header SnapshotHeader, objects func(each func(SnapshotObject) error) error) error {
	db, err := openDatabase(ctx, d, 1)
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.Writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: starting a restore: %w", err)
	}
	defer tx.Rollback()
	var current int64
	if err := tx.QueryRowContext(ctx, `SELECT current FROM meta WHERE id = 1`).Scan(&current); err != nil {
		return fmt.Errorf("sqlstore: reading the target's current revision: %w", err)
	}
	if current != 0 {
		return &NotEmptyError{Current: current}
	}
	r := restorer{ctx: ctx, tx: tx, db: db, header: header}
	if err := objects(r.add); err != nil {
		return err
	}
	if err := r.flush(); err != nil {
		return err
	}
	if r.restored != header.Objects {
		return fmt.Errorf("sqlstore: the snapshot holds %d objects, its header says %d", r.restored, header.Objects)
	}
	if _, err := tx.ExecContext(ctx, db.Rebind(`UPDATE meta SET current = ?, compacted = ?, compact_progress = ? WHERE id = 1`),
		header.Revision, header.Revision, header.Revision); err != nil {
		return fmt.Errorf("sqlstore: setting the restored revision: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: committing the restore: %w", err)
	}
	return nil
}

// restorer inserts a snapshot's objects in chunks, in the restore's transaction (ctx is the
// restore's: objects calls add, which has no context of its own).
type restorer struct {
	ctx      context.Context
	tx       *sql.Tx
	db       *dialects.Database
	header   SnapshotHeader
	pending  []SnapshotObject
	restored int64
}

func (r *restorer) add(obj SnapshotObject) error {
	if err := validateKey(obj.Key); err != nil {
		return err
	}
	if obj.Revision < 1 || obj.Revision > r.header.Revision {
		return fmt.Errorf("sqlstore: object %s/%s/%s has revision %d, outside the snapshot's 1..%d",
			obj.Resource, obj.Namespace, obj.Name, obj.Revision, r.header.Revision)
	}
	r.pending = append(r.pending, obj)
	if len(r.pending) < restoreChunk {
		return nil
	}
	return r.flush()
}

// flush inserts the pending objects: a log row each (a create) and its live row.
func (r *restorer) flush() error {
	if len(r.pending) == 0 {
		return nil
	}
	logArgs := make([]any, 0, 7*len(r.pending))
	liveArgs := make([]any, 0, 5*len(r.pending))
	for _, obj := range r.pending {
		marked := 0
		if obj.Marked {
			marked = 1
		}
		logArgs = append(logArgs, obj.Revision, obj.Resource, obj.Namespace, obj.Name, int(OpCreate), 0, obj.Value)
		liveArgs = append(liveArgs, obj.Resource, obj.Namespace, obj.Name, obj.Revision, marked)
	}
	inserts := []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO revisions (revision, resource, namespace, name, op, prev_revision, value) VALUES ` +
			dialects.Placeholders(len(r.pending), 7), logArgs},
		{`INSERT INTO objects (resource, namespace, name, revision, marked) VALUES ` +
			dialects.Placeholders(len(r.pending), 5), liveArgs},
	}
	for _, insert := range inserts {
		if _, err := r.tx.ExecContext(r.ctx, r.db.Rebind(insert.sql), insert.args...); err != nil {
			return fmt.Errorf("sqlstore: restoring objects: %w", err)
		}
	}
	r.restored += int64(len(r.pending))
	r.pending = r.pending[:0]
	return nil
}
