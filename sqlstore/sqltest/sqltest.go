// Package sqltest gives tests real databases: a SQLite file in the test's temporary directory, or
// a PostgreSQL database of their own on the test server, dropped when the test ends.
package sqltest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // registers the "sqlite" database/sql driver

	"github.com/sqlkube/sqlkube/dialects"
	"github.com/sqlkube/sqlkube/dialects/sqlite"
)

// PostgresEnv overrides the DSN of the PostgreSQL server tests create their databases on; the
// database it names is only used to create and drop them.
const PostgresEnv = "SQLKUBE_TEST_POSTGRES"

const defaultPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// Backends runs fn once per backend, as subtests "sqlite" and "postgres", each with a fresh
// database.
func Backends(t *testing.T, fn func(t *testing.T, dsn string)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLiteDSN(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, PostgresDSN(t)) })
}

// SQLiteDSN names a new database file in the test's temporary directory.
func SQLiteDSN(t testing.TB) string {
	t.Helper()
	return "sqlite://" + SQLitePath(t)
}

// SQLitePath is the path of a new database file in the test's temporary directory (for
// sqlstore.SQLite).
func SQLitePath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "sqlkube.db")
}

// Database is the database dsn names as sqlstore.Open takes it, its dialect picked as the server
// picks it (dialects.Parse): sqlite called with the SQLite file's path, or postgres with dsn.
// Tests pass sqlstore.SQLite and sqlstore.Postgres (sqltest cannot import sqlstore, whose own
// tests use it). The test fails if dsn names no database.
func Database[D any](t testing.TB, dsn string, sqlite, postgres func(string) D) D {
	t.Helper()
	name, address := parse(t, dsn)
	if name == dialects.SQLite {
		return sqlite(address)
	}
	return postgres(address)
}

// parse is the dialect of dsn and what it is opened with: the SQLite file's path, or dsn itself.
func parse(t testing.TB, dsn string) (dialects.Name, string) {
	t.Helper()
	name, err := dialects.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if name != dialects.SQLite {
		return name, dsn
	}
	path, err := sqlite.Path(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return name, path
}

// PostgresDSN creates a uniquely named database and drops it when the test ends, first ending
// any connection left to it. If the server cannot be reached the test is skipped, or fails in CI
// (see Missing).
func PostgresDSN(t testing.TB) string {
	t.Helper()
	admin := adminDSN()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := openAdmin(ctx, admin)
	if err != nil {
		Missing(t, fmt.Sprintf("PostgreSQL not reachable at %s: %v (set %s to use another server)", hostOf(admin), err, PostgresEnv))
	}
	name := "sqlkube_test_" + randomSuffix(t)
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		_ = db.Close()
		t.Fatalf("creating test database %s: %v", name, err)
	}
	t.Cleanup(func() { dropDatabase(t, db, name) })
	return withDatabase(t, admin, name)
}

// InCI reports whether the tests run in CI: the environment variable CI is set to anything but
// "", "0" or "false" (CI services set it to "true", "1" or their own name).
func InCI() bool {
	switch strings.ToLower(os.Getenv("CI")) {
	case "", "0", "false":
		return false
	}
	return true
}

// Missing ends a test that cannot run because something it needs is missing (a server, a
// client program): in CI that is a failure, since a test that does not run proves nothing;
// elsewhere the test is skipped with why.
func Missing(t testing.TB, why string) {
	t.Helper()
	if InCI() {
		t.Fatal(why)
	}
	t.Skip(why + " (in CI this is a failure)")
}

func adminDSN() string {
	if dsn := os.Getenv(PostgresEnv); dsn != "" {
		return dsn
	}
	return defaultPostgres
}

func openAdmin(ctx context.Context, dsn string) (*sql.DB, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

func dropDatabase(t testing.TB, db *sql.DB, name string) {
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx,
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name); err != nil {
		t.Errorf("ending connections to test database %s: %v", name, err)
	}
	if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Errorf("dropping test database %s: %v", name, err)
	}
}

// withDatabase is admin with its database replaced by name.
func withDatabase(t testing.TB, admin, name string) string {
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s must be a postgres:// URL: %v", PostgresEnv, err)
	}
	u.Path = "/" + name
	return u.String()
}

func hostOf(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Host != "" {
		return u.Host
	}
	return "the configured server"
}

func randomSuffix(t testing.TB) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("random database name: %v", err)
	}
	return hex.EncodeToString(b)
}

// Open opens the database a sqlkube DSN names directly, for tests that change it behind the
// store's back (a newer schema version, terminated backends). It is closed when the test ends.
func Open(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	driver := "pgx"
	name, source := parse(t, dsn)
	if name == dialects.SQLite {
		driver = "sqlite"
	}
	db, err := sql.Open(driver, source)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
