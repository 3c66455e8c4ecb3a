package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/sqlkube/sqlkube/dialects"
)

// listChunk is how many rows one query of a list reads. A list runs as a series of keyset-paged
// queries in one read transaction: the rows agree with one snapshot, and stopping early (Limit
// reached) never makes the driver read a whole table's remaining rows off the wire.
const listChunk = 1000

// List calls each for the objects of one consistent snapshot, in (namespace, name) order,
// streaming them from the database. An error from each stops the list and is returned.
//
// Lists at the latest revision read the live set only; lists at an older revision read, per key,
// the newest log row at or below it, skipping keys whose newest such row is a delete.
func (s *Store) List(ctx context.Context, opts ListOptions, each func(Object) error) (ListResult, error) {
	opts = s.inProcessValueContains(opts)
	db := s.db.Reader
	if opts.Bulk {
		db = s.db.Scanner
	}
	tx, err := db.BeginTx(ctx, s.db.ReadTx)
	if err != nil {
		return ListResult{}, s.dbError(ctx, "starting a list", err)
	}
	defer tx.Rollback()

	current, compacted, err := s.readMetaIn(ctx, tx, db != s.db.Reader)
	if err != nil {
		return ListResult{}, err
	}
	revision := opts.Revision
	switch {
	case revision == 0:
		revision = current
	case revision > current:
		return ListResult{}, &FutureRevisionError{Requested: revision, Current: current}
	case revision < compacted:
		return ListResult{}, &CompactedError{Requested: revision, Compacted: compacted}
	}
	if !storable(opts.After.Namespace, opts.After.Name) {
		return ListResult{}, fmt.Errorf("%w: continuing after %q/%q", ErrUnstorableKey, opts.After.Namespace, opts.After.Name)
	}
	start, empty := startWithin(opts)
	if empty || !storable(opts.Resource, opts.Namespace) { // no write has such a key
		return ListResult{Revision: revision}, nil
	}
	opts.After = start
	l := lister{s: s, tx: tx, opts: opts, query: newListQuery(opts, revision, revision == current, s.db)}
	result, err := l.run(ctx, each)
	result.Revision = revision
	return result, err
}

// startWithin restates opts.After for a list of one namespace: a key in an earlier namespace
// means from the start, one in a later namespace means nothing is left.
func startWithin(opts ListOptions) (after Key, empty bool) {
	if opts.Namespace == "" || opts.After.Namespace == opts.Namespace {
		return opts.After, false
	}
	if opts.After.Namespace > opts.Namespace {
		return Key{}, true
	}
	return Key{}, false
}

// lister runs one List in its transaction.
type lister struct {
	s     *Store
	tx    *sql.Tx
	opts  ListOptions
	query listQuery
}

func (l *lister) run(ctx context.Context, each func(Object) error) (ListResult, error) {
	after, matched := l.opts.After, int64(0)
	var last Key
	for {
		chunk := l.chunkSize(matched)
		rows, err := l.tx.QueryContext(ctx, l.s.db.Rebind(l.query.selectRows(after)), l.query.args(after, chunk)...)
		if err != nil {
			return ListResult{}, l.s.dbError(ctx, "listing", err)
		}
		read := 0
		more := false
		for rows.Next() {
			if l.opts.Limit > 0 && matched == l.opts.Limit {
				more = true
				break
			}
			read++
			obj := Object{Key: Key{Resource: l.opts.Resource}}
			if err := rows.Scan(&obj.Namespace, &obj.Name, &obj.Revision, &obj.Value); err != nil {
				rows.Close()
				return ListResult{}, l.s.dbError(ctx, "listing", err)
			}
			if obj.Value, obj.Stale, err = l.s.fromStorageStale(ctx, obj.Key, obj.Value); err != nil {
				rows.Close()
				return ListResult{}, err
			}
			after = obj.Key
			if l.opts.Filter != nil && !l.opts.Filter(obj) {
				continue
			}
			if err := each(obj); err != nil {
				rows.Close()
				return ListResult{}, err
			}
			matched++
			last = obj.Key
		}
		if err := closeRows(rows); err != nil {
			return ListResult{}, l.s.dbError(ctx, "listing", err)
		}
		if more {
			return l.stoppedAt(ctx, last, matched)
		}
		if read < chunk {
			return ListResult{}, nil
		}
	}
}

// chunkSize reads just one row past the limit when every row counts toward it. The row past
// is added after the bound, so that a limit as large as an int64 holds does not overflow.
func (l *lister) chunkSize(matched int64) int {
	if l.opts.Limit > 0 && l.opts.Filter == nil { // ValueContains is in the query
		return int(min(l.opts.Limit-matched, listChunk-1)) + 1
	}
	return listChunk
}

// stoppedAt describes a list that Limit stopped after last, with keys following it; returned
// is how many objects it returned.
func (l *lister) stoppedAt(ctx context.Context, last Key, returned int64) (ListResult, error) {
	if l.opts.Filter != nil || len(l.opts.ValueContains) > 0 || l.opts.Marked {
		return ListResult{More: true, Remaining: -1}, nil
	}
	// Unfiltered, every key read was returned: those after last are the known rest less them.
	if remaining := l.opts.KnownRemaining - returned; l.opts.KnownRemaining > 0 && l.opts.Revision > 0 && remaining > 0 {
		return ListResult{More: true, Remaining: remaining}, nil
	}
	var remaining int64
	err := l.tx.QueryRowContext(ctx, l.s.db.Rebind(l.query.count(last)), l.query.args(last, 0)...).Scan(&remaining)
	if err != nil {
		return ListResult{}, l.s.dbError(ctx, "counting the rest of a list", err)
	}
	return ListResult{More: true, Remaining: remaining}, nil
}

func closeRows(rows *sql.Rows) error {
	err := rows.Err()
	if closeErr := rows.Close(); err == nil {
		err = closeErr
	}
	return err
}

// listQuery builds the SQL of one list, over the live set or over the log at a revision. Every
// value is a parameter.
type listQuery struct {
	from      string // the table whose rows are the keys, as r
	withValue string // what to add to from to read the value column
	value     string // the value column
	where     string // the fixed conditions
	fixedArgs []any
	namespace string
}

// db gives the dialect's conditions and table hints.
func newListQuery(opts ListOptions, revision int64, latest bool, db *dialects.Database) listQuery {
	q := listQuery{namespace: opts.Namespace}
	var where strings.Builder
	if latest {
		q.from = ` FROM objects r`
		if opts.Marked {
			q.from = ` FROM objects r` + db.MarkedIndexHint
		}
		q.withValue, q.value = ` JOIN revisions v ON v.revision = r.revision`, `v.value`
		where.WriteString(` WHERE r.resource = ?`)
		q.fixedArgs = append(q.fixedArgs, opts.Resource)
		if opts.Marked {
			where.WriteString(` AND r.marked = 1`) // the partial index objects_marked has these rows
		}
	} else {
		q.from, q.value = ` FROM revisions r`, `r.value`
		// The newest row of each key at or below revision, unless it is a delete.
		where.WriteString(` WHERE r.resource = ? AND r.revision <= ? AND r.op <> 3` +
			` AND NOT EXISTS (SELECT 1 FROM revisions n WHERE n.resource = r.resource AND n.namespace = r.namespace` +
			` AND n.name = r.name AND n.revision > r.revision AND n.revision <= ?)`)
		q.fixedArgs = append(q.fixedArgs, opts.Resource, revision, revision)
	}
	if opts.Namespace != "" {
		where.WriteString(` AND r.namespace = ?`)
		q.fixedArgs = append(q.fixedArgs, opts.Namespace)
	}
	if len(opts.ValueContains) > 0 {
		conditions := make([]string, len(opts.ValueContains))
		for i, part := range opts.ValueContains {
			conditions[i] = db.Contains(q.value)
			q.fixedArgs = append(q.fixedArgs, part)
		}
		where.WriteString(` AND (` + strings.Join(conditions, ` OR `) + `)`)
	}
	q.where = where.String()
	return q
}

// afterCondition continues strictly after key. Within one namespace it compares names only (List
// has made after's namespace that one), so the database seeks in its index.
func (q listQuery) afterCondition(after Key) string {
	switch {
	case after.Namespace == "" && after.Name == "":
		return ""
	case q.namespace != "":
		return ` AND r.name > ?`
	}
	return ` AND (r.namespace, r.name) > (?, ?)`
}

func (q listQuery) args(after Key, limit int) []any {
	args := append([]any(nil), q.fixedArgs...)
	switch {
	case after.Namespace == "" && after.Name == "":
	case q.namespace != "":
		args = append(args, after.Name)
	default:
		args = append(args, after.Namespace, after.Name)
	}
	if limit > 0 {
		args = append(args, limit)
	}
	return args
}

func (q listQuery) selectRows(after Key) string {
	return `SELECT r.namespace, r.name, r.revision, ` + q.value + q.from + q.withValue + q.where + q.afterCondition(after) +
		` ORDER BY r.namespace, r.name LIMIT ?`
}

func (q listQuery) count(after Key) string {
	return `SELECT COUNT(*)` + q.from + q.where + q.afterCondition(after)
}
