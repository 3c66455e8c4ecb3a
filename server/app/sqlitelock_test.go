package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLockSQLiteFile: a second server is refused the SQLite file another holds, and may take it
// once the first lets go; PostgreSQL locks nothing.
func TestLockSQLiteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sqlkube.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dsn := "sqlite://" + path
	unlock, err := lockSQLiteFile(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockSQLiteFile(dsn); err == nil || !strings.Contains(err.Error(), "another sqlkube serves the SQLite database "+path) {
		t.Fatalf("a second lock: %v", err)
	}
	unlock()
	unlock, err = lockSQLiteFile(dsn)
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	unlock()
	if _, err := lockSQLiteFile("postgres://postgres@127.0.0.1/x"); err != nil {
		t.Fatal(err)
	}
}
