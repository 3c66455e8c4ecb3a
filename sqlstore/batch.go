package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/sqlkube/sqlkube/dialects"
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
	reads := []dialects.Statement{lockCurrent(&current), liveRevisions(batch, revisions)}
	var outcome batchOutcome
	err := s.db.Transact(ctx, reads, func() ([]dialects.Statement, error) {
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
		return s.db.WriteBatch(plan.rows(), outcome.current), nil
	})
	if err != nil {
		return batchOutcome{}, err
	}
	return outcome, nil
}

// lockCurrent locks the counter row and reads the current revision into current (left as it
// was if the row is missing).
func lockCurrent(current *int64) dialects.Statement {
	return dialects.Statement{
		SQL: `UPDATE meta SET current = current WHERE id = 1 RETURNING current`,
		Row: func(scan func(...any) error) error { return scan(current) },
	}
}

// liveRevisions reads the live revision of every key the batch touches into revisions, in one
// query.
func liveRevisions(batch []*pendingWrite, revisions map[Key]int64) dialects.Statement {
	seen := make(map[Key]bool, len(batch))
	keys := make([]Key, 0, len(batch))
	for _, p := range batch {
		if !seen[p.write.Key] {
			seen[p.write.Key] = true
			keys = append(keys, p.write.Key)
		}
	}
	lookup := selectLive(keys)
	lookup.Row = func(scan func(...any) error) error {
		var k Key
		var rev int64
		if err := scan(&k.Resource, &k.Namespace, &k.Name, &rev); err != nil {
			return err
		}
		revisions[k] = rev
		return nil
	}
	return lookup
}

// selectLive selects the live rows of keys, with a row of placeholders per key. Repeating the
// last key up to a power of two keeps the statement to a few shapes, which statement caches hold.
// (Taking the keys as unnest() arrays, as the writes do on PostgreSQL, cost PostgreSQL ~15 µs
// more CPU per write.)
func selectLive(keys []Key) dialects.Statement {
	lookups := 1
	for lookups < len(keys) {
		lookups *= 2
	}
	args := make([]any, 0, 3*lookups)
	for i := range lookups {
		k := keys[min(i, len(keys)-1)]
		args = append(args, k.Resource, k.Namespace, k.Name)
	}
	return dialects.Statement{
		SQL: `SELECT resource, namespace, name, revision FROM objects WHERE (resource, namespace, name) IN (VALUES ` +
			dialects.Placeholders(lookups, 3) + `)`,
		Args: args,
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

// rows is the plan as the dialect writes it.
func (plan batchPlan) rows() dialects.Batch {
	b := dialects.Batch{Log: make([]dialects.LogRow, len(plan.log))}
	for i, r := range plan.log {
		b.Log[i] = dialects.LogRow{Key: dialects.Key(r.Key), Revision: r.Revision, Op: int64(r.op), Prev: r.prev, Value: r.stored}
	}
	for _, k := range plan.order {
		if i := plan.live[k]; i >= 0 {
			b.Live = append(b.Live, dialects.LiveRow{Key: dialects.Key(k), Revision: plan.log[i].Revision, Marked: plan.log[i].marked})
		} else {
			b.Gone = append(b.Gone, dialects.Key(k))
		}
	}
	return b
}
