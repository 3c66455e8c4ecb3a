package main

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sqlkube/sqlkube/sqlstore"
)

func TestSnapshotCommandLine(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"snapshot"}, 2, "Usage:\n  sqlkube snapshot save --db DSN FILE"},
		{[]string{"snapshot", "--help"}, 0, "sqlkube snapshot restore --db DSN FILE"},
		{[]string{"snapshot", "copy"}, 2, `sqlkube snapshot: unknown command "copy"`},
		{[]string{"snapshot", "status"}, 2, "sqlkube snapshot status: expected one snapshot FILE argument"},
		{[]string{"snapshot", "save", "--db", "sqlite://" + dir + "/a.db", "x", "y"}, 2, "expected one snapshot FILE argument"},
		{[]string{"snapshot", "status", "-w", "yaml", "x"}, 1, `unknown output format "yaml" (want simple, table or json)`},
		{[]string{"snapshot", "save", "--db", "sqlite://" + dir + "/missing.db", "x"}, 1, "no SQLite database to save at " + dir + "/missing.db"},
		{[]string{"snapshot", "restore", "--db", "mysql://x", "x"}, 1, "sqlkube snapshot restore: "},
	} {
		code, stdout, stderr := runCLI(t, c.args...)
		if c.code == 0 { // help, on stdout
			stderr = stdout
		}
		if code != c.code || !strings.Contains(stderr, c.stderr) {
			t.Errorf("%v: exit %d, output %q; want exit %d and %q", c.args, code, stderr, c.code, c.stderr)
		}
	}
}

func TestSnapshotSaveRestoreStatus(t *testing.T) {
	dir := t.TempDir()
	source, target := "sqlite://"+filepath.Join(dir, "source.db"), "sqlite://"+filepath.Join(dir, "target.db")
	store, err := sqlstore.Open(context.Background(), sqlstore.SQLite(filepath.Join(dir, "source.db")), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.Write(context.Background(), sqlstore.Write{Op: sqlstore.OpCreate,
		Key:    sqlstore.Key{Resource: "namespaces", Name: "a"},
		Render: func(int64) ([]byte, error) { return []byte(`{}`), nil }})
	if err := errors.Join(err, store.Close()); err != nil {
		t.Fatal(err)
	}
	saved, again := filepath.Join(dir, "saved.snapshot"), filepath.Join(dir, "again.snapshot")
	for _, c := range []struct {
		args   []string
		stdout string
	}{
		{[]string{"save", "--db", source, saved}, "Snapshot saved at " + saved + ": revision 1, 1 objects, 113 B\n"},
		{[]string{"restore", "--db", target, saved}, "Restored 1 objects from " + saved + " at revision 1\n"},
		{[]string{"save", "--db", target, again}, "Snapshot saved at " + again + ": revision 1, 1 objects, 113 B\n"},
	} {
		if code, stdout, stderr := runCLI(t, append([]string{"snapshot"}, c.args...)...); code != 0 || stdout != c.stdout {
			t.Fatalf("%v: exit %d, stdout %q, stderr %s; want stdout %q", c.args, code, stdout, stderr, c.stdout)
		}
	}
	var statuses []map[string]any
	for _, file := range []string{saved, again} {
		code, stdout, stderr := runCLI(t, "snapshot", "status", "-w", "json", file)
		var status map[string]any
		if err := json.Unmarshal([]byte(stdout), &status); code != 0 || err != nil {
			t.Fatalf("status: exit %d (%v), %s%s", code, err, stdout, stderr)
		}
		statuses = append(statuses, status)
	}
	want := map[string]any{"revision": 1.0, "totalKey": 1.0, "totalSize": 113.0, "formatVersion": 1.0, "hash": statuses[0]["hash"]}
	if !reflect.DeepEqual(statuses[0], want) || !reflect.DeepEqual(statuses[1], want) {
		t.Fatalf("status of the saved and the re-saved snapshot: %v, %v; want both %v", statuses[0], statuses[1], want)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 1000: "1.0 kB", 95672489: "95.7 MB", 2e12: "2.0 TB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
