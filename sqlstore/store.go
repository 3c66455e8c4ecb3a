package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sqlkube/sqlkube/dialects"
	"github.com/sqlkube/sqlkube/dialects/postgres"
	"github.com/sqlkube/sqlkube/dialects/sqlite"
)

// defaultRetention keeps five minutes of history, as kube-apiserver's etcd compaction does.
const defaultRetention = 5 * time.Minute

// checkpointInterval is how often SQLite's WAL is copied into the database file.
const checkpointInterval = 100 * time.Millisecond

// Options configure Open.
type Options struct {
	Logger *slog.Logger
	// MaxConns sizes the connection pool (PostgreSQL); 0 picks a default.
	MaxConns int
	// Retention keeps at least this much history (0: five minutes); RetentionMinRevisions keeps
	// at least this many revisions; CompactionInterval is how often the compactor runs (0: a
	// tenth of Retention, at least a second).
	Retention             time.Duration
	RetentionMinRevisions int64
	CompactionInterval    time.Duration
	// WatchBuffer bounds each watcher's queue of undelivered events; 0 picks a default.
	WatchBuffer int
	// Mark picks, from its value, an object that lists with Marked return; nil marks every
	// object. The database indexes the marked objects, so a marked list reads only them. Mark
	// must be the same for every process of one database, and may only ever pick more objects
	// than an earlier version did together with a migration that marks them.
	Mark func(value []byte) bool
	// Transformer, when set, transforms the values of the resources it covers between the form
	// written and read and the form the database keeps (encryption at rest).
	Transformer Transformer
	// Observer is told of commits, the change feed's work, compactions and checkpoints, for
	// metrics; nil observes nothing.
	Observer Observer
}

// Store is an open database with its change feed and compactor running.
//
// For the change feed (feed.go, watch.go): db.Reader runs reads, with SQL written with '?'
// placeholders and passed through db.Rebind; when db.Name is dialects.Postgres, database.address
// (the DSN) is what postgres.Listen connects to and dialects.NotifyChannel is what every write
// transaction notifies with its new current revision; opts.WatchBuffer sizes watcher queues;
// logger() logs.
type Store struct {
	db       *dialects.Database
	database Database
	opts     Options
	feed     *feed
	// getStmt and metaStmt are the most frequent reads, prepared once per reader connection
	// rather than parsed on every call.
	getStmt, metaStmt *sql.Stmt

	writes        chan *pendingWrite
	closing       chan struct{} // closed by Close: no new writes, background work stops
	committerDone chan struct{} // closed when the committer has answered its last batch
	walRestartDue atomic.Bool   // set by the checkpointer, cleared by the committer (SQLite)
	walFrames     atomic.Int64  // the WAL's length at the last checkpoint (SQLite)
	stop          context.CancelFunc
	background    sync.WaitGroup
	closeOnce     sync.Once
	closeErr      error

	// compactMu keeps one compaction at a time in this process (an advisory lock does it across
	// PostgreSQL replicas).
	compactMu sync.Mutex
}

// Open connects to the database d names (ErrNoDatabase if none), runs migrations, and starts the
// change feed and compactor.
func Open(ctx context.Context, d Database, opts Options) (*Store, error) {
	opts = withDefaults(opts)
	db, err := openDatabase(ctx, d, opts.MaxConns)
	if err != nil {
		return nil, err
	}
	getStmt, err := db.Reader.PrepareContext(ctx, db.Rebind(
		`SELECT o.revision, r.value FROM objects o JOIN revisions r ON r.revision = o.revision`+
			` WHERE o.resource = ? AND o.namespace = ? AND o.name = ?`))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("sqlstore: preparing reads: %w", err), db.Close())
	}
	metaStmt, err := db.Reader.PrepareContext(ctx, metaQuery)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("sqlstore: preparing reads: %w", err), getStmt.Close(), db.Close())
	}
	bg, stop := context.WithCancel(context.Background())
	s := &Store{
		db:            db,
		database:      d,
		getStmt:       getStmt,
		metaStmt:      metaStmt,
		opts:          opts,
		writes:        make(chan *pendingWrite, maxBatchWrites),
		closing:       make(chan struct{}),
		committerDone: make(chan struct{}),
		stop:          stop,
	}
	s.feed = newFeed(s)
	s.goBackground(func() { s.feed.run(bg) })
	s.goBackground(s.commitLoop)
	s.goBackground(func() { s.compactLoop(bg) })
	if db.Checkpoint != nil {
		s.goBackground(func() { s.checkpointLoop(bg) })
	}
	return s, nil
}

// openDatabase opens the database d names, in its dialect, and brings its schema up to date.
func openDatabase(ctx context.Context, d Database, maxConns int) (*dialects.Database, error) {
	switch d.dialect {
	case dialects.SQLite:
		return sqlite.OpenDatabase(ctx, d.address)
	case dialects.Postgres:
		return postgres.OpenDatabase(ctx, d.address, maxConns)
	}
	return nil, ErrNoDatabase
}

func withDefaults(opts Options) Options {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	if opts.Retention <= 0 {
		opts.Retention = defaultRetention
	}
	if opts.CompactionInterval <= 0 {
		opts.CompactionInterval = max(opts.Retention/10, time.Second)
	}
	return opts
}

func (s *Store) goBackground(run func()) {
	s.background.Add(1)
	go func() {
		defer s.background.Done()
		run()
	}()
}

// walRestartFrames is the WAL length (64 MiB of 4 KiB pages, SQLite's journal_size_limit here)
// past which the committer restarts the WAL: passive checkpoints alone never let it start over
// while commits keep coming.
const walRestartFrames = 16384

// checkpointLoop runs the database's upkeep every checkpointInterval, so that commits never do it.
func (s *Store) checkpointLoop(ctx context.Context) {
	ticker := time.NewTicker(checkpointInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		start := time.Now()
		walFrames, err := s.db.Checkpoint(ctx)
		if err != nil && ctx.Err() == nil {
			s.logger().Warn("sqlstore: checkpoint failed; will retry", "err", err)
		}
		s.opts.Observer.Checkpointed(time.Since(start))
		s.walFrames.Store(walFrames)
		if walFrames > walRestartFrames {
			s.walRestartDue.Store(true)
		}
	}
}

func (s *Store) logger() *slog.Logger { return s.opts.Logger }

// Close stops background work, ends all watchers, and closes the database. Writes already taken
// into a batch complete; writes still queued fail with ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.stop()
		s.background.Wait()
		s.closeErr = errors.Join(s.getStmt.Close(), s.metaStmt.Close(), s.db.Close())
	})
	return s.closeErr
}

// Ready reports whether the database answers.
func (s *Store) Ready(ctx context.Context) error {
	var one int
	if err := s.db.Reader.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return s.dbError(ctx, "checking the database", err)
	}
	return nil
}

// Get reads the latest state of one key.
func (s *Store) Get(ctx context.Context, key Key) (Object, error) {
	if !storable(key.Resource, key.Namespace, key.Name) {
		return Object{}, ErrNotFound
	}
	obj := Object{Key: key}
	err := s.getStmt.QueryRowContext(ctx, key.Resource, key.Namespace, key.Name).Scan(&obj.Revision, &obj.Value)
	if errors.Is(err, sql.ErrNoRows) {
		return Object{}, ErrNotFound
	}
	if err != nil {
		return Object{}, s.dbError(ctx, "reading an object", err)
	}
	if obj.Value, obj.Stale, err = s.fromStorageStale(ctx, key, obj.Value); err != nil {
		return Object{}, err
	}
	return obj, nil
}

// CurrentRevision is the latest committed revision, read from the database (so it includes
// writes made by other replicas).
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	current, _, err := s.readMeta(ctx, nil)
	return current, err
}

// CompactedRevision is the newest revision whose history is gone: reads and watches must start
// after it.
func (s *Store) CompactedRevision(ctx context.Context) (int64, error) {
	_, compacted, err := s.readMeta(ctx, nil)
	return compacted, err
}

// metaQuery reads the current and compacted revisions.
const metaQuery = `SELECT current, compacted FROM meta WHERE id = 1`

// readMeta reads the current and compacted revisions, in tx if not nil.
func (s *Store) readMeta(ctx context.Context, tx *sql.Tx) (current, compacted int64, err error) {
	return s.readMetaIn(ctx, tx, false)
}

// readMetaIn is readMeta in a transaction of another pool than the readers' (notPrepared), where
// the statement prepared on the readers can't run.
func (s *Store) readMetaIn(ctx context.Context, tx *sql.Tx, notPrepared bool) (current, compacted int64, err error) {
	var row *sql.Row
	switch {
	case notPrepared:
		row = tx.QueryRowContext(ctx, metaQuery)
	case tx != nil:
		row = tx.StmtContext(ctx, s.metaStmt).QueryRowContext(ctx)
	default:
		row = s.metaStmt.QueryRowContext(ctx)
	}
	if err := row.Scan(&current, &compacted); err != nil {
		return 0, 0, s.dbError(ctx, "reading the current revision", err)
	}
	return current, compacted, nil
}

// dbError turns a driver error into the store's: connection trouble and lost races wrap
// ErrUnavailable, so callers can tell them from bugs; a request that ended gets its own error,
// and so does a read on a closed store.
func (s *Store) dbError(ctx context.Context, doing string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("sqlstore: %s: %w", doing, ctxErr)
	}
	select {
	case <-s.closing:
		return fmt.Errorf("%w: %s", ErrClosed, doing)
	default:
	}
	switch s.db.Classify(err) {
	case dialects.Retry, dialects.Unavailable:
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, doing, err)
	}
	return &DatabaseError{Doing: doing, Err: err}
}
