// Package sqlstore keeps opaque JSON objects in SQL as an append-only revision log plus a live
// set, and publishes every committed write, in revision order, to in-process watchers.
//
// It knows nothing about HTTP or Kubernetes types: objects are keys and bytes. The server renders
// the bytes; the store assigns revisions, enforces preconditions, and serves snapshots and events.
package sqlstore

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/sqlkube/sqlkube/dialects"
)

// Database is the database Open and Restore use, and its dialect: the caller picks it with SQLite
// or Postgres (for a DSN, dialects.Parse says which it names). The zero Database names none: Open
// and Restore fail with ErrNoDatabase. Databases compare equal when they were built alike.
type Database struct {
	dialect dialects.Name
	// address is the SQLite file's path or the PostgreSQL DSN.
	address string
}

// SQLite is the SQLite database in the file at path (relative to the working directory unless
// absolute), which Open and Restore create, readable by its owner only, if there is none; its
// directory must exist.
func SQLite(path string) Database { return Database{dialect: dialects.SQLite, address: path} }

// Postgres is the PostgreSQL database dsn names, a "postgres://..." or "postgresql://..." URL or
// anything else pgx parses (an invalid one fails Open, never with its password). The database
// must exist; Open and Restore create its tables or bring them up to date.
func Postgres(dsn string) Database { return Database{dialect: dialects.Postgres, address: dsn} }

// Key names one object. Resource is the storage name of a type, "resource.group" ("configmaps",
// "leases.coordination.k8s.io"); Namespace is empty for cluster-scoped objects.
type Key struct {
	Resource  string
	Namespace string
	Name      string
}

// Object is one stored version of an object: the bytes written at Revision.
type Object struct {
	Key
	Revision int64
	Value    []byte
	// Stale is set on an object read (by Get or List) through a Transformer that no longer
	// writes its value that way (an old encryption key, or no encryption): writing it again, even
	// unchanged, stores it anew.
	Stale bool
	// Attached is what the write that stored this version in this process attached to it
	// (Write.Attached), on the objects of watch events only: that write's event and, as its Prev,
	// the next event of the key while the window of recent events holds both. It is never
	// stored: nil on everything read from the database.
	Attached any
}

// Op is the kind of a write.
type Op int

const (
	OpCreate Op = iota + 1
	OpUpdate
	OpDelete
)

func (o Op) String() string {
	switch o {
	case OpCreate:
		return "create"
	case OpUpdate:
		return "update"
	case OpDelete:
		return "delete"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Write is one requested change.
//
// Update and Delete apply only if the object's current revision equals ExpectedRevision
// (ErrConflict otherwise, ErrNotFound if the key does not exist); the server always reads before it
// writes and passes the revision it read. Create fails with ErrExists if the key exists.
//
// Render produces the bytes to store, given the revision this write is assigned (so the stored
// JSON can carry its own resourceVersion). For a delete, Render produces the object as last seen,
// which the log keeps and the DELETED event carries. Render is called inside the commit path, at
// most once per attempt: keep it cheap and free of side effects. If it fails, only this write
// fails, with Render's error. The bytes it returns are kept as they are (the written Object's
// Value and the change feed's events share them), so they must be a new slice that nobody
// changes afterwards.
//
// Attached is handed to this write's watch event (its Object.Attached) and never stored: what
// the writer already knows of the object (what watchers' selectors read of it, say), so that
// watchers need not decode the bytes for it. It must describe the bytes Render returns, and
// nobody may change it afterwards. Events read back from the log have none: other replicas'
// writes, history replayed from before the window, writes the feed fell behind on.
type Write struct {
	Op               Op
	Key              Key
	ExpectedRevision int64
	Render           func(revision int64) ([]byte, error)
	Attached         any
}

// ListOptions selects what List reads.
type ListOptions struct {
	Resource string
	// Namespace limits the list to one namespace; empty lists all namespaces (and is the only
	// choice for cluster-scoped resources).
	Namespace string
	// Revision is the snapshot to read: 0 reads the latest state; otherwise the state as it was
	// at that revision (*CompactedError if older than the compacted revision, *FutureRevisionError if
	// newer than the current one).
	Revision int64
	// After continues a list: only keys strictly after (After.Namespace, After.Name), in
	// (namespace, name) byte order, are returned. Zero value: from the start.
	After Key
	// Limit bounds how many matching objects are returned; 0 means no limit.
	Limit int64
	// KnownRemaining, when positive, is how many keys follow After at Revision (a page before
	// this one counted them at the same snapshot): Remaining is then derived from it rather than
	// counted again. Ignored at the latest revision (Revision 0), where it may no longer hold.
	KnownRemaining int64
	// Filter, when set, keeps only the objects it returns true for. It applies before Limit.
	Filter func(Object) bool
	// ValueContains, when set, keeps only the objects whose stored value contains at least one
	// of these byte strings (case-sensitive). The database evaluates it, so the objects it drops
	// are never copied out of the database. It applies before Filter and Limit.
	ValueContains [][]byte
	// Marked keeps only the objects the store's Mark picked when they were written (and those
	// written before the store had marks), read through an index: a list of a few marked objects
	// among a million reads a few rows. At an older Revision it keeps every object.
	Marked bool
	// Bulk marks a read of many rows that no client waits for (a controller's list): the
	// database may serve it from connections that keep no cache or memory map, so that it
	// costs the process no memory and displaces nothing the clients' reads use.
	Bulk bool
}

// ListResult describes a finished List call.
type ListResult struct {
	// Revision is the snapshot the list was read at.
	Revision int64
	// More is true when Limit stopped the list and further keys exist after the last object
	// returned (they may not match Filter).
	More bool
	// Remaining counts the keys after the last object returned when More is true and none of
	// Filter, ValueContains and Marked is set; -1 when unknown.
	Remaining int64
}

// WatchOptions selects what a watcher receives.
type WatchOptions struct {
	Resource string
	// Namespace limits events to one namespace; empty means all.
	Namespace string
	// After is the revision the watch starts after: it receives every event with a revision
	// greater than After, exactly once, in order. *CompactedError if After is older than the
	// compacted revision; *FutureRevisionError if newer than the current revision.
	After int64
	// Index and Key narrow the watch to the events Index files under Key. The hub keeps the
	// watcher under its key, so that the events filed under other keys cost it nothing. Key
	// without Index is an error.
	Index *Index
	Key   string
}

// Index files a resource's events under keys (what watchers select on: "spec.nodeName=n1"), so
// that a watch naming one key is offered only the events filed under it (WatchOptions.Index).
// An event is filed under the keys of the object it wrote and of the state it replaced, so that
// a watcher of a key also sees an object leave it; an event whose Err is set, which cannot be
// read, under every key. Watchers that share an Index share each event's keys, computed once
// per event: make one Index per resource and way of keying.
type Index struct {
	keys func(*Event) []string
}

// NewIndex is the Index that files each event ev under keys(ev) (in any order, repeats
// allowed; the store may reorder the slice). keys runs on the change feed's goroutine while
// the watchers wait: it must be quick, read only ev, and not block.
func NewIndex(keys func(ev *Event) []string) *Index { return &Index{keys: keys} }

// Event is one committed write, as a watcher receives it. Events are shared between watchers and
// must not be modified.
//
// For OpCreate and OpUpdate, Object is the new state and Prev the state it replaced (nil for a
// create). For OpDelete, Object is the object as deleted, with Revision the delete's revision, and
// Prev the state before the delete.
//
// A Progress event carries no object: it only says that every event up to Revision has been
// delivered on this watch (used for bookmarks), and is sent after RequestProgress.
//
// Err, an *UnreadableError, is set on an event read from the log whose value (or previous value)
// the Transformer could not give back; its values are then as stored. A watcher that receives
// it cannot tell what changed and should end with that error. The event still takes its place,
// so that the feed and every other watcher go on.
type Event struct {
	Op       Op
	Progress bool
	Revision int64
	Object   Object
	Prev     *Object
	Err      error

	// The keys an Index files the event under (keysIn), sorted and distinct, and that Index.
	// Guarded by the hub's lock while the event is in the window; an event read from the log
	// for one watcher's replay is that watcher's alone.
	keysIndex *Index
	keys      []string

	keyedMu sync.Mutex
	keyed   map[any]*keyedMemo
}

// keyedMemo is one value of MemoKeyed, computed once.
type keyedMemo struct {
	once  sync.Once
	value any
}

// ErrNotFound: the key does not exist.
var ErrNotFound = errors.New("sqlstore: not found")

// ErrExists: a create found the key taken.
var ErrExists = errors.New("sqlstore: already exists")

// ErrConflict: an update or delete named a revision that is no longer the object's current one.
var ErrConflict = errors.New("sqlstore: revision conflict")

// ErrUnstorableKey: a write named a key with a part that is not valid UTF-8 or holds NUL, text
// PostgreSQL cannot store (refused on every backend alike).
var ErrUnstorableKey = errors.New("sqlstore: key part not valid UTF-8 without NUL")

// ErrWatcherTooSlow ends a watch whose consumer fell behind the bounded buffer.
var ErrWatcherTooSlow = errors.New("sqlstore: watcher fell behind and was closed")

// ErrNoDatabase: Open or Restore was given the zero Database rather than one of SQLite or
// Postgres.
var ErrNoDatabase = errors.New("sqlstore: no database given (sqlstore.SQLite or sqlstore.Postgres)")

// ErrClosed: the store has been closed.
var ErrClosed = errors.New("sqlstore: closed")

// ErrUnavailable wraps database failures that are worth retrying (connection lost, database
// restarting, serialization failures that exhausted their retries).
var ErrUnavailable = errors.New("sqlstore: database unavailable")

// DatabaseError is a failure the database reported that is not worth retrying: a fault of the
// server or its database, whose text (SQL, the driver's words) is for the server's log, never for
// a client.
type DatabaseError struct {
	Doing string // what the store was doing
	Err   error
}

func (e *DatabaseError) Error() string { return "sqlstore: " + e.Doing + ": " + e.Err.Error() }

func (e *DatabaseError) Unwrap() error { return e.Err }

// CompactedError: a read or watch asked for a revision the log no longer holds.
type CompactedError struct {
	Requested int64
	Compacted int64
}

func (e *CompactedError) Error() string {
	return fmt.Sprintf("sqlstore: revision %d is compacted (oldest retained is after %d)", e.Requested, e.Compacted)
}

// UnreadableError: the Transformer could not give back the value stored for Key, e.g. one
// encrypted with a key the configuration no longer holds, or encrypted while the server has no
// encryption configured for it. Err is the Transformer's error.
type UnreadableError struct {
	Key Key
	Err error
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("sqlstore: reading %s/%s/%s: %v", e.Key.Resource, e.Key.Namespace, e.Key.Name, e.Err)
}

func (e *UnreadableError) Unwrap() error { return e.Err }

// FutureRevisionError: a read or watch asked for a revision newer than the store has.
type FutureRevisionError struct {
	Requested int64
	Current   int64
}

func (e *FutureRevisionError) Error() string {
	return fmt.Sprintf("sqlstore: revision %d is newer than the current revision %d", e.Requested, e.Current)
}

// keysIn is the sorted, distinct keys idx files the event under, computed once for idx.
func (e *Event) keysIn(idx *Index) []string {
	if e.keysIndex != idx {
		keys := idx.keys(e)
		slices.Sort(keys)
		e.keys, e.keysIndex = slices.Compact(keys), idx
	}
	return e.keys
}

// filedUnder reports whether idx files the event under key.
func (e *Event) filedUnder(idx *Index, key string) bool {
	if e.Err != nil {
		return true
	}
	_, found := slices.BinarySearch(e.keysIn(idx), key)
	return found
}

// MemoKeyed returns the value compute derives from this event for key (a comparable value),
// computing it once for all watchers that ask with an equal key (for example what a selector
// reads of the event's objects, or its object in one version and one encoding), so that fan-out
// to many watchers decodes, converts and encodes each event once. Computations for different
// keys run concurrently; one for a key that is being computed waits for it. The values live as
// long as the event (in the window of recent events, among others), so they should be derived
// from it and of its size.
func (e *Event) MemoKeyed(key any, compute func() any) any {
	e.keyedMu.Lock()
	m := e.keyed[key]
	if m == nil {
		if e.keyed == nil {
			e.keyed = map[any]*keyedMemo{}
		}
		m = &keyedMemo{}
		e.keyed[key] = m
	}
	e.keyedMu.Unlock()
	m.once.Do(func() { m.value = compute() })
	return m.value
}
