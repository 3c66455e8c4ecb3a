package sqlstore

import (
	"context"
	"log/slog"
	"time"
)

// Options configure Open.
type Options struct {
	// DSN picks the database: "sqlite://PATH" or "postgres://..." / "postgresql://...".
	DSN    string
	Logger *slog.Logger
	// MaxConns sizes the connection pool (PostgreSQL); 0 picks a default.
	MaxConns int
	// Retention keeps at least this much history; RetentionMinRevisions keeps at least this many
	// revisions; CompactionInterval is how often the compactor runs (0: a fraction of Retention).
	Retention             time.Duration
	RetentionMinRevisions int64
	CompactionInterval    time.Duration
	// WatchBuffer bounds each watcher's queue of undelivered events; 0 picks a default.
	WatchBuffer int
}

// Store is an open database with its change feed and compactor running.
type Store struct{}

// Open connects, runs migrations, and starts the change feed and compactor.
func Open(ctx context.Context, opts Options) (*Store, error) { panic("TODO") }

// Close stops background work, ends all watchers, and closes the database.
func (s *Store) Close() error { panic("TODO") }

// Ready reports whether the database answers.
func (s *Store) Ready(ctx context.Context) error { panic("TODO") }

// Write applies one change in its own revision and returns the stored object. Concurrent writes
// are committed together (group commit); Write returns only after its commit is durable.
func (s *Store) Write(ctx context.Context, w Write) (Object, error) { panic("TODO") }

// Get reads the latest state of one key.
func (s *Store) Get(ctx context.Context, key Key) (Object, error) { panic("TODO") }

// CurrentRevision is the latest committed revision, read from the database (so it includes
// writes made by other replicas).
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) { panic("TODO") }

// CompactedRevision is the newest revision whose history is gone: reads and watches must start
// after it.
func (s *Store) CompactedRevision(ctx context.Context) (int64, error) { panic("TODO") }

// List calls each for the objects of one consistent snapshot, in (namespace, name) order,
// streaming them from the database. An error from each stops the list and is returned.
func (s *Store) List(ctx context.Context, opts ListOptions, each func(Object) error) (ListResult, error) {
	panic("TODO")
}

// Compact discards history at and below revision, keeping what reads after it need.
func (s *Store) Compact(ctx context.Context, revision int64) error { panic("TODO") }
