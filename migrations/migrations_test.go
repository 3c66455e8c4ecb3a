package migrations

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

func openSQLite(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestUpIsIdempotent: a second run on an up-to-date database changes nothing and succeeds.
func TestUpIsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	for range 2 {
		if err := Up(openSQLite(t, path), SQLite); err != nil {
			t.Fatalf("Up: %v", err)
		}
	}
	db := openSQLite(t, path)
	defer db.Close()
	var current, compacted int64
	if err := db.QueryRow(`SELECT current, compacted FROM meta`).Scan(&current, &compacted); err != nil || current != 0 || compacted != 0 {
		t.Fatalf("meta after two runs: %d %d %v", current, compacted, err)
	}
}

func TestUnknownDialect(t *testing.T) {
	err := Up(openSQLite(t, filepath.Join(t.TempDir(), "m.db")), Dialect("oracle"))
	if err == nil || !strings.Contains(err.Error(), "oracle") {
		t.Fatalf("Up with an unknown dialect: %v", err)
	}
}
