// Package postgres opens PostgreSQL databases with pgx/v5 (through database/sql, so the SQL shared
// with SQLite runs unchanged), classifies errors by SQLSTATE, and listens for notifications.
// OpenDatabase builds the dialects.Database sqlstore uses.
package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/sqlkube/sqlkube/dialects"
)

// DefaultMaxConns sizes the pool when the caller does not.
const DefaultMaxConns = 16

// defaultConnectTimeout keeps requests from hanging while the database is unreachable; a DSN's
// connect_timeout overrides it.
const defaultConnectTimeout = 5 * time.Second

// Open returns a pool of at most maxConns connections (DefaultMaxConns if 0) and checks that the
// database answers.
func Open(ctx context.Context, dsn string, maxConns int) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors never include the password.
		return nil, fmt.Errorf("invalid PostgreSQL DSN: %w", err)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = defaultConnectTimeout
	}
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("connecting to PostgreSQL at %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	return db, nil
}

// Rebind turns the '?' placeholders of shared SQL into PostgreSQL's $1, $2, ... The shared SQL
// never has '?' inside string literals.
func Rebind(query string) string {
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] != '?' {
			b.WriteByte(query[i])
			continue
		}
		n++
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}

// Classify says what a driver error means, by SQLSTATE and by the error types of pgx and net.
func Classify(err error) dialects.Kind {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return classifySQLState(pgErr.Code)
	}
	var netErr net.Error
	var connectErr *pgconn.ConnectError
	switch {
	case errors.As(err, &connectErr), errors.As(err, &netErr),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		pgconn.SafeToRetry(err), pgconn.Timeout(err):
		return dialects.Unavailable
	}
	return dialects.Other
}

func classifySQLState(code string) dialects.Kind {
	switch code {
	case "23505": // unique_violation
		return dialects.UniqueViolation
	case "40001", "40P01": // serialization_failure, deadlock_detected
		return dialects.Retry
	case "57P01", "57P02", "57P03", "53300": // admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections
		return dialects.Unavailable
	}
	if strings.HasPrefix(code, "08") { // connection_exception class
		return dialects.Unavailable
	}
	return dialects.Other
}

// Listen LISTENs on channel over a connection of its own (outside any pool, which would hand the
// session to others) and calls notify with each payload, in order. It returns when ctx ends (with
// ctx's error) or when the connection fails.
func Listen(ctx context.Context, dsn, channel string, notify func(payload string)) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("invalid PostgreSQL DSN: %w", err)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = defaultConnectTimeout
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connecting to PostgreSQL to listen: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return fmt.Errorf("listening on %s: %w", channel, err)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("waiting for notifications on %s: %w", channel, err)
		}
		notify(n.Payload)
	}
}

// LockCompaction takes the session-level advisory lock that lets one replica at a time compact,
// on conn, which must stay out of the pool until unlock is called. With wait false it returns
// false at once if another session holds the lock.
func LockCompaction(ctx context.Context, conn *sql.Conn, wait bool) (locked bool, unlock func() error, err error) {
	if wait {
		_, err = conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", compactionLockID)
		locked = err == nil
	} else {
		err = conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", compactionLockID).Scan(&locked)
	}
	if err != nil || !locked {
		return false, nil, err
	}
	unlock = func() error {
		_, err := conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", compactionLockID)
		return err
	}
	return true, unlock, nil
}

// VacuumTables makes the space of deleted and replaced rows of sqlkube's tables reusable. It is
// VACUUM without FULL: reads and writes go on while it runs.
const VacuumTables = "VACUUM objects, revisions"

// RewriteTables writes sqlkube's tables (and their TOAST tables) anew with only their live rows
// and removes the old files, so that no page of theirs keeps a deleted row's bytes. VACUUM FULL
// holds an exclusive lock: reads and writes of the tables wait until it is done.
const RewriteTables = "VACUUM FULL objects, revisions"

// compactionLockID is an arbitrary constant: "sqlkube" + 1 in ASCII, so as not to collide with
// golang-migrate's lock ids, which are CRC32 hashes.
const compactionLockID int64 = 0x73716c6b75626501
