package sqltest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestSQLiteDSN: a new file in the test's own temporary directory, which Database hands the
// SQLite constructor as a path.
func TestSQLiteDSN(t *testing.T) {
	dsn := SQLiteDSN(t)
	path, ok := strings.CutPrefix(dsn, "sqlite://")
	if !ok || filepath.Base(path) != "sqlkube.db" || !filepath.IsAbs(path) {
		t.Fatalf("SQLiteDSN = %q", dsn)
	}
	got := Database(t, dsn, func(p string) string { return "sqlite " + p }, func(d string) string { return "postgres " + d })
	if got != "sqlite "+path {
		t.Fatalf("Database(%q) = %q", dsn, got)
	}
	if SQLitePath(t) == path {
		t.Fatal("two SQLite databases of one test share a file")
	}
}

// TestPostgresDSN: a database of its own, which exists for the test, is handed to the PostgreSQL
// constructor as the DSN itself, and is dropped when the test ends.
func TestPostgresDSN(t *testing.T) {
	var name string
	t.Run("owner", func(t *testing.T) {
		dsn := PostgresDSN(t)
		if got := Database(t, dsn, func(string) string { return "sqlite" }, func(d string) string { return d }); got != dsn {
			t.Fatalf("Database(%q) = %q", dsn, got)
		}
		db := Open(t, dsn)
		if err := db.QueryRowContext(t.Context(), "SELECT current_database()").Scan(&name); err != nil || !strings.HasPrefix(name, "sqlkube_test_") {
			t.Fatalf("current database %q, %v", name, err)
		}
	})
	if name == "" {
		return // skipped: no PostgreSQL outside CI
	}
	admin, err := openAdmin(context.Background(), adminDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var count int
	if err := admin.QueryRowContext(t.Context(), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&count); err != nil || count != 0 {
		t.Fatalf("database %s left after its test: %d, %v", name, count, err)
	}
}

// TestInCI: CI counts as set unless empty, "0" or "false" in any case.
func TestInCI(t *testing.T) {
	for value, want := range map[string]bool{"": false, "0": false, "false": false, "FALSE": false, "true": true, "1": true, "github": true} {
		t.Setenv("CI", value)
		if got := InCI(); got != want {
			t.Errorf("CI=%q: InCI() = %v", value, got)
		}
	}
}
