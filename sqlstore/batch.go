package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// batchOutcome is what a committed batch answers: results[i] belongs to the batch's i-th write
// (the writes after them were left for the next batch), and current is the new current revision
// (0 when no write was applied).
type batchOutcome struct {
	results []writeResult
	current int64
}

// batchPlan is the work of one batch transaction: the log rows to insert and the final state of
// each key the batch changed.
type batchPlan struct {
	log     []logRow
	live    map[Key]int // index in log of the key's last row, or -1 when the batch deleted it
	order   []Key       // keys of live, in first-write order, so statements are deterministic
	results []writeResult
	bytes   int
}

type logRow struct {
	Object
	op   Op
	prev int64
	// marked is 1 when the store's Mark picks the value (always without a Mark), else 0.
	marked int
	// stored is what the database keeps: the value, or its transformation.
	stored []byte
}

// markRows sets the marks of the plan's rows.
func (plan batchPlan) markRows(mark func(value []byte) bool) {
	for i := range plan.log {
		if mark == nil || mark(plan.log[i].Value) {
			plan.log[i].marked = 1
		}
	}
}

// applyBatch runs one batch transaction. It locks the counter row first, so that revisions are
// taken and committed in order even across replicas (DESIGN.md invariants 1 and 2), checks each
// write's precondition against the state left by the writes before it, and commits once. Writes
// that fail their precondition or rendering consume no revision and do not affect the others.
//
// The key lookup runs after the lock, in its own statement: on PostgreSQL (READ COMMITTED) a
// statement sees what was committed when it started, so it sees every batch committed before the
// lock was granted, another replica's too.
func (s *Store) applyBatch(ctx context.Context, batch []*pendingWrite) (batchOutcome, error) {
	current := int64(-1)
	revisions := make(map[Key]int64, len(batch))
	reads := []query{lockCurrent(&current), liveRevisions(batch, revisions)}
	var outcome batchOutcome
	err := s.transact(ctx, reads, func() ([]statement, error) {
		if current < 0 {
			return nil, errors.New("sqlstore: the meta row is missing")
		}
		plan := planBatch(ctx, batch, revisions, current, s.toStorage)
		plan.markRows(s.opts.Mark)
		outcome.results = plan.results
		if len(plan.log) == 0 {
			return nil, nil
		}
		outcome.current = plan.log[len(plan.log)-1].Revision
		return s.db.writeBatch(plan, outcome.current), nil
	})
	if err != nil {
		return batchOutcome{}, err
	}
	return outcome, nil
}

// commitError is a failed COMMIT: unlike a failure before it, the batch may have been written,
// so it must not be run again.
type commitError struct{ err error }

func (e *commitError) Error() string { return "commit: " + e.err.Error() }
func (e *commitError) Unwrap() error { return e.err }

// query is a statement whose rows row reads, one call per row, with a function that scans the
// row's columns into dest.
type query struct {
	statement
	row func(scan func(dest ...any) error) error
}

// transact runs a write transaction: the reads, then the statements that write returns (none:
// the transaction ends without writing), then COMMIT. The dialect's own transact, where it has
// one, saves round trips.
func (s *Store) transact(ctx context.Context, reads []query, write func() ([]statement, error)) error {
	if s.db.transact != nil {
		return s.db.transact(ctx, reads, write)
	}
	tx, err := s.db.writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range reads {
		if err := s.readRows(ctx, tx, q); err != nil {
			return err
		}
	}
	writes, err := write()
	if err != nil || len(writes) == 0 {
		return err
	}
	for _, st := range writes {
		if err := s.writeStmts.exec(ctx, tx, s.db.rebind(st.sql), st.args...); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return &commitError{err: err}
	}
	return nil
}

// readRows runs q in tx and hands its rows to q.row.
func (s *Store) readRows(ctx context.Context, tx *sql.Tx, q query) error {
	rows, err := s.writeStmts.query(ctx, tx, s.db.rebind(q.sql), q.args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := q.row(rows.Scan); err != nil {
			return err
		}
	}
	return closeRows(rows)
}

// lockCurrent locks the counter row and reads the current revision into current (left as it
// was if the row is missing).
func lockCurrent(current *int64) query {
	return query{
		statement: statement{sql: `UPDATE meta SET current = current WHERE id = 1 RETURNING current`},
		row:       func(scan func(...any) error) error { return scan(current) },
	}
}

// liveRevisions reads the live revision of every key the batch touches into revisions, in one
// query.
func liveRevisions(batch []*pendingWrite, revisions map[Key]int64) query {
	seen := make(map[Key]bool, len(batch))
	keys := make([]Key, 0, len(batch))
	for _, p := range batch {
		if !seen[p.write.Key] {
			seen[p.write.Key] = true
			keys = append(keys, p.write.Key)
		}
	}
	return query{
		statement: selectLive(keys),
		row: func(scan func(...any) error) error {
			var k Key
			var rev int64
			if err := scan(&k.Resource, &k.Namespace, &k.Name, &rev); err != nil {
				return err
			}
			revisions[k] = rev
			return nil
		},
	}
}

// selectLive selects the live rows of keys, with a row of placeholders per key. Repeating the
// last key up to a power of two keeps the statement to a few shapes, which statement caches hold.
// (Taking the keys as unnest() arrays, as the writes do on PostgreSQL, cost PostgreSQL ~15 µs
// more CPU per write.)
func selectLive(keys []Key) statement {
	lookups := 1
	for lookups < len(keys) {
		lookups *= 2
	}
	args := make([]any, 0, 3*lookups)
	for i := range lookups {
		k := keys[min(i, len(keys)-1)]
		args = append(args, k.Resource, k.Namespace, k.Name)
	}
	return statement{
		sql: `SELECT resource, namespace, name, revision FROM objects WHERE (resource, namespace, name) IN (VALUES ` +
			placeholderRows(lookups, 3) + `)`,
		args: args,
	}
}

// planBatch decides, in memory, the outcome of each write in order. revisions holds the live
// keys' revisions and is updated as writes apply. It stops before a write once the rendered bytes
// reach maxBatchBytes.
func planBatch(ctx context.Context, batch []*pendingWrite, revisions map[Key]int64, current int64, toStorage storageForm) batchPlan {
	plan := batchPlan{live: map[Key]int{}}
	for _, p := range batch {
		if plan.bytes >= maxBatchBytes {
			break
		}
		row, err := prepareWrite(ctx, p.write, revisions, current+int64(len(plan.log))+1, toStorage)
		if err != nil {
			plan.results = append(plan.results, writeResult{err: err})
			continue
		}
		plan.add(row)
		if row.op == OpDelete {
			delete(revisions, row.Key)
		} else {
			revisions[row.Key] = row.Revision
		}
	}
	return plan
}

func (plan *batchPlan) add(row logRow) {
	plan.log = append(plan.log, row)
	plan.results = append(plan.results, writeResult{obj: row.Object})
	plan.bytes += len(row.stored)
	if _, seen := plan.live[row.Key]; !seen {
		plan.order = append(plan.order, row.Key)
	}
	plan.live[row.Key] = len(plan.log) - 1
	if row.op == OpDelete {
		plan.live[row.Key] = -1
	}
}

// storageForm gives what the database keeps for a key's value.
type storageForm func(ctx context.Context, key Key, value []byte) ([]byte, error)

// prepareWrite checks w's precondition against the key's live revision (0: absent), renders it
// at revision, and gives the value's storage form.
func prepareWrite(ctx context.Context, w Write, revisions map[Key]int64, revision int64, toStorage storageForm) (logRow, error) {
	live, exists := revisions[w.Key]
	switch {
	case w.Op == OpCreate && exists:
		return logRow{}, ErrExists
	case w.Op != OpCreate && !exists:
		return logRow{}, ErrNotFound
	case w.Op != OpCreate && live != w.ExpectedRevision:
		return logRow{}, ErrConflict
	}
	value, err := render(w, revision)
	if err != nil {
		return logRow{}, err
	}
	stored, err := toStorage(ctx, w.Key, value)
	if err != nil {
		return logRow{}, fmt.Errorf("sqlstore: transforming %s/%s for storage: %w", w.Key.Namespace, w.Key.Name, err)
	}
	return logRow{Object: Object{Key: w.Key, Revision: revision, Value: value}, op: w.Op, prev: live, stored: stored}, nil
}

// render calls the caller's Render, which runs on the committer: a panic in it must fail only its
// own write, not the process.
func render(w Write, revision int64) (value []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sqlstore: rendering %s %s/%s panicked: %v", w.Op, w.Key.Namespace, w.Key.Name, r)
		}
	}()
	value, err = w.Render(revision)
	if err == nil && value == nil {
		value = []byte{}
	}
	return value, err
}

// statement is one SQL statement, with '?' placeholders, and its arguments.
type statement struct {
	sql  string
	args []any
}

// statements inserts the log rows and brings the live set to the batch's final state of each
// key: one upsert for the keys that exist after the batch, one delete for those that do not.
func (plan batchPlan) statements() []statement {
	log := statement{sql: `INSERT INTO revisions (revision, resource, namespace, name, op, prev_revision, value) VALUES ` +
		placeholderRows(len(plan.log), 7)}
	for _, r := range plan.log {
		log.args = append(log.args, r.Revision, r.Resource, r.Namespace, r.Name, int(r.op), r.prev, r.stored)
	}
	statements := []statement{log}
	var upserts, deletes []any
	for _, k := range plan.order {
		if i := plan.live[k]; i >= 0 {
			upserts = append(upserts, k.Resource, k.Namespace, k.Name, plan.log[i].Revision, plan.log[i].marked)
		} else {
			deletes = append(deletes, k.Resource, k.Namespace, k.Name)
		}
	}
	if len(upserts) > 0 {
		statements = append(statements, statement{
			sql: `INSERT INTO objects (resource, namespace, name, revision, marked) VALUES ` + placeholderRows(len(upserts)/5, 5) +
				` ON CONFLICT (resource, namespace, name) DO UPDATE SET revision = excluded.revision, marked = excluded.marked`,
			args: upserts,
		})
	}
	if len(deletes) > 0 {
		statements = append(statements, statement{
			sql:  `DELETE FROM objects WHERE (resource, namespace, name) IN (VALUES ` + placeholderRows(len(deletes)/3, 3) + `)`,
			args: deletes,
		})
	}
	return statements
}

// placeholderRows renders "(?, ?), (?, ?)" for rows rows of width placeholders.
func placeholderRows(rows, width int) string {
	row := "(" + strings.Repeat("?, ", width-1) + "?)"
	return strings.Repeat(row+", ", rows-1) + row
}
