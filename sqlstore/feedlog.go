package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/sqlkube/sqlkube/dialects"
)

// sqlLog reads the revision log for the feed and for watchers replaying history.
type sqlLog struct {
	db *dialects.Database
	// dbError classifies a failure (ErrUnavailable for the retryable ones) and says what failed.
	dbError func(ctx context.Context, doing string, err error) error
	// fromStorage gives back a value as written from what the database keeps.
	fromStorage func(ctx context.Context, key Key, stored []byte) ([]byte, error)
	// Queries by selection: all resources, one resource, one resource and namespace.
	allQuery, resourceQuery, namespaceQuery, boundsQuery string
}

// logColumns joins each row to its key's previous row, which is the event's Prev (and the state a
// delete removed).
const logColumns = `SELECT r.revision, r.resource, r.namespace, r.name, r.op, r.value, p.revision, p.value
FROM revisions r LEFT JOIN revisions p ON p.revision = r.prev_revision AND r.prev_revision > 0
WHERE r.revision > ? AND r.revision <= ?`

const logOrder = ` ORDER BY r.revision LIMIT ?`

// The selections compare r.resource || ” rather than r.resource so that no index on the key
// applies: reading the revision range through the primary key costs the range once, where the
// key index would read and sort the resource's whole history for every page.
func newSQLLog(db *dialects.Database, dbError func(context.Context, string, error) error, fromStorage storageForm) *sqlLog {
	return &sqlLog{
		db:             db,
		dbError:        dbError,
		fromStorage:    fromStorage,
		allQuery:       db.Rebind(logColumns + logOrder),
		resourceQuery:  db.Rebind(logColumns + ` AND r.resource || '' = ?` + logOrder),
		namespaceQuery: db.Rebind(logColumns + ` AND r.resource || '' = ? AND r.namespace = ?` + logOrder),
		boundsQuery:    db.Rebind(`SELECT current, compacted FROM meta WHERE id = 1`),
	}
}

func (l *sqlLog) bounds(ctx context.Context) (current, compacted int64, err error) {
	if err := l.db.Reader.QueryRowContext(ctx, l.boundsQuery).Scan(&current, &compacted); err != nil {
		return 0, 0, l.dbError(ctx, "reading the current revision", err)
	}
	return current, compacted, nil
}

func (l *sqlLog) read(ctx context.Context, resource, namespace string, after, through int64, limit int) ([]*Event, error) {
	if !storable(resource, namespace) {
		return nil, nil // no write has such a key
	}
	query, args := l.allQuery, []any{after, through}
	switch {
	case resource != "" && namespace != "":
		query, args = l.namespaceQuery, append(args, resource, namespace)
	case resource != "":
		query, args = l.resourceQuery, append(args, resource)
	}
	rows, err := l.db.Reader.QueryContext(ctx, query, append(args, limit)...)
	if err != nil {
		return nil, l.dbError(ctx, "reading the revision log", err)
	}
	defer rows.Close()
	var events []*Event
	for rows.Next() {
		ev, err := scanEvent(rows)
		if err != nil {
			return nil, l.dbError(ctx, "reading the revision log", err)
		}
		if err := l.fromStorageForm(ctx, ev); err != nil {
			return nil, err
		}
		events = append(events, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, l.dbError(ctx, "reading the revision log", err)
	}
	return events, nil
}

// fromStorageForm gives back the values of ev as written. A value the Transformer cannot read
// is left as stored and noted in ev.Err, for the watchers it reaches; any other error is
// returned.
func (l *sqlLog) fromStorageForm(ctx context.Context, ev *Event) error {
	for _, obj := range []*Object{&ev.Object, ev.Prev} {
		if obj == nil {
			continue
		}
		value, err := l.fromStorage(ctx, obj.Key, obj.Value)
		var unreadable *UnreadableError
		switch {
		case errors.As(err, &unreadable):
			ev.Err = err
		case err != nil:
			return err
		default:
			obj.Value = value
		}
	}
	return nil
}

func scanEvent(rows *sql.Rows) (*Event, error) {
	var (
		ev        Event
		op        int64
		prevRev   sql.NullInt64
		prevValue []byte
	)
	o := &ev.Object
	if err := rows.Scan(&o.Revision, &o.Resource, &o.Namespace, &o.Name, &op, &o.Value, &prevRev, &prevValue); err != nil {
		return nil, err
	}
	ev.Op, ev.Revision = Op(op), o.Revision
	if prevRev.Valid {
		ev.Prev = &Object{Key: o.Key, Revision: prevRev.Int64, Value: prevValue}
	}
	return &ev, nil
}
