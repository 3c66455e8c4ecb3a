package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sqlkube/sqlkube/dialects"
)

func TestPath(t *testing.T) {
	for dsn, want := range map[string]string{
		"sqlite://./sqlkube.db":        "./sqlkube.db",
		"sqlite://sqlkube.db":          "sqlkube.db",
		"sqlite:///var/lib/sqlkube.db": "/var/lib/sqlkube.db",
	} {
		if got, err := Path(dsn); err != nil || got != want {
			t.Errorf("Path(%q) = %q, %v; want %q", dsn, got, err, want)
		}
	}
	for _, dsn := range []string{"sqlite://", "sqlite://x.db?mode=ro", "postgres://x"} {
		if _, err := Path(dsn); err == nil {
			t.Errorf("Path(%q) accepted", dsn)
		}
	}
}

// TestOpenSettings checks the durability and concurrency settings of each connection.
func TestOpenSettings(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "with space.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, c := range []struct {
		pragma string
		want   string
	}{
		{"journal_mode", "wal"},
		{"synchronous", "2"},
		{"busy_timeout", "10000"},
	} {
		var got string
		if err := db.Readers.QueryRowContext(ctx, "PRAGMA "+c.pragma).Scan(&got); err != nil || got != c.want {
			t.Errorf("PRAGMA %s = %q, %v; want %q", c.pragma, got, err, c.want)
		}
	}
	if _, err := db.Writer.ExecContext(ctx, "CREATE TABLE t (k TEXT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Readers.ExecContext(ctx, "INSERT INTO t VALUES ('x')"); err == nil {
		t.Fatal("a reader connection could write")
	}
	if _, err := db.Writer.ExecContext(ctx, "INSERT INTO t VALUES ('x')"); err != nil {
		t.Fatal(err)
	}
	_, err = db.Writer.ExecContext(ctx, "INSERT INTO t VALUES ('x')")
	if Classify(err) != dialects.UniqueViolation {
		t.Fatalf("duplicate key: %v classified %v", err, Classify(err))
	}
	if _, err := db.Checkpoint(ctx); err != nil {
		t.Fatalf("Checkpoint: %v", err)
	}
}

// TestRestartWAL checks that a WAL a passive checkpoint leaves long starts over once RestartWAL
// completes, and that a reader of an older snapshot makes it give up rather than wait.
func TestRestartWAL(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "wal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	insert := func(n int) {
		t.Helper()
		for range n {
			if _, err := db.Writer.ExecContext(ctx, "INSERT INTO t (v) VALUES (randomblob(4000))"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := db.Writer.ExecContext(ctx, "CREATE TABLE t (v BLOB)"); err != nil {
		t.Fatal(err)
	}
	insert(50)
	reader, err := db.Readers.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := reader.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	insert(50) // the reader's snapshot is now older than the WAL's end

	if restarted, err := db.RestartWAL(ctx); err != nil || restarted {
		t.Fatalf("RestartWAL with a reader of an older snapshot = %v, %v; want false, nil", restarted, err)
	}
	if err := reader.Rollback(); err != nil {
		t.Fatal(err)
	}
	if restarted, err := db.RestartWAL(ctx); err != nil || !restarted {
		t.Fatalf("RestartWAL = %v, %v; want true, nil", restarted, err)
	}
	insert(1)
	frames, err := db.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if frames > 10 {
		t.Errorf("after a restart and one insert the WAL holds %d frames; want it to have started over", frames)
	}
	var timeout int
	if err := db.Writer.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&timeout); err != nil || timeout != busyTimeoutMillis {
		t.Errorf("writer busy_timeout after RestartWAL = %d, %v; want %d", timeout, err, busyTimeoutMillis)
	}
}

// TestOpenRelativePath opens "sqlite://./sqlkube.db" relative to the working directory.
func TestOpenRelativePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	path, err := Path("sqlite://./sqlkube.db")
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := os.Stat(filepath.Join(dir, "sqlkube.db")); err != nil {
		t.Fatalf("database file not in the working directory: %v", err)
	}
}
