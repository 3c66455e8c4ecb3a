// Package sqlite opens SQLite databases (modernc.org/sqlite, pure Go) the way sqlkube needs them:
// WAL, a busy timeout, synchronous=FULL, one writer connection and a pool of readers.
// OpenDatabase builds the dialects.Database sqlstore uses.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/sqlkube/sqlkube/dialects"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// busyTimeoutMillis is how long a statement waits for another connection's lock before failing
// with SQLITE_BUSY.
const busyTimeoutMillis = 10000

// maxReaders bounds the concurrent read connections. A list holds one while it streams to its
// client, so there are enough that slow clients leave others room.
const maxReaders = 16

// maxScanners bounds the connections of bulk reads; more controllers than this wait their turn.
const maxScanners = 4

// Path returns the file path of a "sqlite://PATH" DSN; relative paths are relative to the working
// directory ("sqlite://./sqlkube.db"), absolute ones have three slashes ("sqlite:///var/lib/x.db").
func Path(dsn string) (string, error) {
	path, ok := strings.CutPrefix(dsn, "sqlite://")
	if !ok || path == "" {
		return "", fmt.Errorf("invalid SQLite DSN %q: expected sqlite://PATH", dsn)
	}
	if strings.ContainsAny(path, "?#") {
		return "", fmt.Errorf("invalid SQLite DSN %q: the path may not contain '?' or '#'", dsn)
	}
	return path, nil
}

// DB is an open SQLite database.
type DB struct {
	// Writer has a single connection: SQLite allows one writer at a time, and queueing in Go is
	// cheaper than waiting on the busy timeout. Its transactions begin IMMEDIATE.
	Writer *sql.DB
	// Readers is a pool of query-only connections; each read transaction is a WAL snapshot.
	Readers *sql.DB
	// Scanners are query-only connections for bulk reads by the server's own controllers: no
	// memory map and a small page cache, so that a scan of every row at start-up neither maps
	// the database file into the process nor displaces the readers' caches.
	Scanners *sql.DB
	// checkpointer copies the WAL into the database file, off the write path.
	checkpointer *sql.DB
}

// Open opens (creating if needed) the database file at path.
func Open(ctx context.Context, path string) (*DB, error) {
	if err := createPrivate(path); err != nil {
		return nil, err
	}
	// journal_mode=WAL is stored in the file, so the writer sets it before others connect. The
	// writer never checkpoints (wal_autocheckpoint=0): a commit would otherwise now and then
	// also copy the WAL into the database file and wait for that to sync. When the WAL starts
	// over, a WAL that a burst made large is cut back to 64 MiB. secure_delete=FAST zeros what
	// a write or a compaction deletes from the pages it rewrites anyway, at no I/O added (ON
	// would also write every page it frees, and its cost could not be told from the noise of a
	// loaded machine: -37% to +50% on updates with compaction); pages freed whole keep their
	// bytes until reused, and Rewrite removes them all.
	writer, err := openPool(ctx, path,
		"_txlock=immediate&_pragma=journal_mode(WAL)&_pragma=wal_autocheckpoint(0)&_pragma=journal_size_limit(67108864)&_pragma=secure_delete(FAST)", 1)
	if err != nil {
		return nil, err
	}
	// Readers map the file (no read syscall per page) and keep a larger page cache: lists read
	// many pages.
	readers, err := openPool(ctx, path, "_pragma=query_only(1)&_pragma=mmap_size(268435456)&_pragma=cache_size(-16000)", maxReaders)
	if err != nil {
		_ = writer.Close()
		return nil, err
	}
	scanners, err := openPool(ctx, path, "_pragma=query_only(1)&_pragma=mmap_size(0)&_pragma=cache_size(-2000)", maxScanners)
	if err != nil {
		return nil, errors.Join(err, writer.Close(), readers.Close())
	}
	checkpointer, err := openPool(ctx, path, "_pragma=wal_autocheckpoint(0)", 1)
	if err != nil {
		return nil, errors.Join(err, writer.Close(), readers.Close(), scanners.Close())
	}
	return &DB{Writer: writer, Readers: readers, Scanners: scanners, checkpointer: checkpointer}, nil
}

// Checkpoint copies committed WAL frames into the database file without waiting for readers or
// blocking the writer (PASSIVE). Call it periodically, away from requests. It returns how many
// frames the WAL holds: under a steady stream of commits a passive checkpoint never catches up
// with the end of the WAL, so the WAL never starts over and grows without bound (and with it
// the shared-memory index every connection maps) until RestartWAL is run.
func (db *DB) Checkpoint(ctx context.Context) (walFrames int64, err error) {
	var busy, checkpointed int64
	err = db.checkpointer.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &walFrames, &checkpointed)
	return walFrames, err
}

// restartBusyTimeoutMillis bounds how long RestartWAL waits for readers of older snapshots (a
// long list): the writer is held for that long at most, and the WAL restarts at a later try.
const restartBusyTimeoutMillis = 20

// RestartWAL checkpoints the whole WAL and makes the next commit write it from its start (and
// cut the file back to journal_size_limit). It runs on the writer connection, between write
// transactions, so it never waits for the writer lock; it waits at most
// restartBusyTimeoutMillis for readers. It returns whether the WAL was fully checkpointed.
func (db *DB) RestartWAL(ctx context.Context) (restarted bool, err error) {
	conn, err := db.Writer.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", restartBusyTimeoutMillis)); err != nil {
		return false, err
	}
	var busy, walFrames, checkpointed int64
	err = conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(RESTART)").Scan(&busy, &walFrames, &checkpointed)
	_, resetErr := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", busyTimeoutMillis))
	return err == nil && busy == 0, errors.Join(err, resetErr)
}

// Rewrite rewrites the database file with only what its tables hold now (VACUUM), so that no
// page keeps the bytes of a deleted row, and then empties the WAL (a TRUNCATE checkpoint), whose
// frames may hold older versions of pages. It runs on the writer connection; writers of other
// processes wait for it (or fail after the busy timeout on a large database), and it fails if
// readers of other processes keep the WAL in use for longer than the busy timeout.
func (db *DB) Rewrite(ctx context.Context) error {
	conn, err := db.Writer.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "VACUUM"); err != nil {
		return fmt.Errorf("VACUUM: %w", err)
	}
	var busy, walFrames, checkpointed int64
	if err := conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &walFrames, &checkpointed); err != nil {
		return fmt.Errorf("emptying the WAL: %w", err)
	}
	if busy != 0 {
		return errors.New("emptying the WAL: other connections kept reading it; try again")
	}
	return nil
}

// OpenForMigrations opens a single connection for schema changes.
func OpenForMigrations(ctx context.Context, path string) (*sql.DB, error) {
	if err := createPrivate(path); err != nil {
		return nil, err
	}
	return openPool(ctx, path, "_pragma=journal_mode(WAL)", 1)
}

// createPrivate creates the database file, if there is none, readable by its owner only: it
// holds every object, Secrets among them. SQLite gives its WAL and shared-memory files the
// database file's mode. An existing file keeps the mode it has.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("opening SQLite database %s: %w", path, err)
	}
	return f.Close()
}

// Close closes the pools.
func (db *DB) Close() error {
	return errors.Join(db.checkpointer.Close(), db.Scanners.Close(), db.Readers.Close(), db.Writer.Close())
}

func openPool(ctx context.Context, path, params string, conns int) (*sql.DB, error) {
	// synchronous=FULL syncs the WAL on every commit: no acknowledged write is lost on a crash.
	dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=synchronous(FULL)&%s",
		(&url.URL{Path: path}).EscapedPath(), busyTimeoutMillis, params)
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("opening SQLite database %s: %w", path, err)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxIdleTime(0)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("opening SQLite database %s: %w", path, err)
	}
	return db, nil
}

// Classify says what a driver error means, by SQLite result code.
func Classify(err error) dialects.Kind {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return dialects.Other
	}
	switch e.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return dialects.Retry
	case sqlite3.SQLITE_CONSTRAINT:
		if e.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || e.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE {
			return dialects.UniqueViolation
		}
	}
	return dialects.Other
}
