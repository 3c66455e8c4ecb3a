package snapshot_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/snapshot"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// savedSnapshot writes n configmaps to a new SQLite store and saves it; it returns the file.
func savedSnapshot(t *testing.T, n int) (string, snapshot.Status) {
	t.Helper()
	s, err := sqlstore.Open(context.Background(), sqlstore.SQLite(sqltest.SQLitePath(t)), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range n {
		_, err := s.Write(context.Background(), sqlstore.Write{
			Op: sqlstore.OpCreate, Key: sqlstore.Key{Resource: "configmaps", Namespace: "ns", Name: fmt.Sprint(i)},
			Render: func(rev int64) ([]byte, error) { return fmt.Appendf(nil, `{"rv":%d}`, rev), nil },
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "snap.db")
	status, err := snapshot.Save(context.Background(), s, file)
	if err != nil {
		t.Fatalf("Save: %v", err)
	}
	return file, status
}

func TestSaveVerify(t *testing.T) {
	file, saved := savedSnapshot(t, 5)
	info, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file + ".part"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the .part file is left: %v", err)
	}
	if saved.Revision != 5 || saved.TotalKey != 5 || saved.TotalSize != info.Size() || len(saved.Hash) != 64 || saved.FormatVersion != 1 {
		t.Fatalf("Save's status = %+v, file size %d", saved, info.Size())
	}
	verified, err := snapshot.Verify(file)
	if err != nil || verified != saved {
		t.Fatalf("Verify = %+v, %v; want %+v", verified, err, saved)
	}
}

func TestDamagedFilesAreRefused(t *testing.T) {
	file, _ := savedSnapshot(t, 3)
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)-40] ^= 1 // in the last value
	cases := map[string][]byte{
		"flipped byte":      flipped,
		"truncated":         good[:len(good)-10],
		"no trailer":        good[:len(good)-32],
		"trailing data":     append(append([]byte(nil), good...), 0),
		"not a snapshot":    []byte("SQLite format 3\x00"),
		"empty":             nil,
		"huge length":       append([]byte("sqlkube-snapshot\n{\"formatVersion\":1,\"revision\":1,\"objects\":1}\n"), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f),
		"fewer than header": []byte("sqlkube-snapshot\n{\"formatVersion\":1,\"revision\":1,\"objects\":1}\n"),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			damaged := filepath.Join(t.TempDir(), "damaged.db")
			if err := os.WriteFile(damaged, data, 0o600); err != nil {
				t.Fatal(err)
			}
			var corrupt *snapshot.CorruptError
			if _, err := snapshot.Verify(damaged); !errors.As(err, &corrupt) {
				t.Fatalf("Verify: %v; want a CorruptError", err)
			}
			target := sqltest.SQLitePath(t)
			if _, err := snapshot.Restore(context.Background(), sqlstore.SQLite(target), damaged); !errors.As(err, &corrupt) {
				t.Fatalf("Restore: %v; want a CorruptError", err)
			}
			if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("Restore of a damaged file touched the target: %v", err)
			}
		})
	}
	newer := filepath.Join(t.TempDir(), "newer.db")
	if err := os.WriteFile(newer, []byte("sqlkube-snapshot\n{\"formatVersion\":2,\"revision\":1,\"objects\":0}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Verify(newer); err == nil || err.Error() != "snapshot: format version 2 is not supported (this sqlkube reads version 1)" {
		t.Fatalf("Verify of a newer format: %v", err)
	}
}

func TestRestoreFromFile(t *testing.T) {
	file, saved := savedSnapshot(t, 3)
	target := sqlstore.SQLite(sqltest.SQLitePath(t))
	restored, err := snapshot.Restore(context.Background(), target, file)
	if err != nil || restored != saved {
		t.Fatalf("Restore = %+v, %v; want %+v", restored, err, saved)
	}
	s, err := sqlstore.Open(context.Background(), target, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	obj, err := s.Get(context.Background(), sqlstore.Key{Resource: "configmaps", Namespace: "ns", Name: "2"})
	if err != nil || obj.Revision != 3 || string(obj.Value) != `{"rv":3}` {
		t.Fatalf("restored object = %+v, %v", obj, err)
	}
}
