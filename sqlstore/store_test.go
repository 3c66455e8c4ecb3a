package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// openStore opens a store on the database dsn names, closed when the test ends.
func openStore(t testing.TB, dsn string) *sqlstore.Store {
	t.Helper()
	return openStoreWith(t, dsn, sqlstore.Options{})
}

func openStoreWith(t testing.TB, dsn string, opts sqlstore.Options) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(context.Background(), sqltest.Database(t, dsn, sqlstore.SQLite, sqlstore.Postgres), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func cm(ns, name string) sqlstore.Key {
	return sqlstore.Key{Resource: "configmaps", Namespace: ns, Name: name}
}

// body renders a value that carries its revision, as the server's objects do.
func body(data string) func(int64) ([]byte, error) {
	return func(rev int64) ([]byte, error) {
		return fmt.Appendf(nil, `{"rv":%d,"data":%q}`, rev, data), nil
	}
}

func create(t testing.TB, s *sqlstore.Store, key sqlstore.Key, data string) sqlstore.Object {
	t.Helper()
	obj, err := s.Write(context.Background(), sqlstore.Write{Op: sqlstore.OpCreate, Key: key, Render: body(data)})
	if err != nil {
		t.Fatalf("create %v: %v", key, err)
	}
	return obj
}

func update(s *sqlstore.Store, key sqlstore.Key, expected int64, data string) (sqlstore.Object, error) {
	return s.Write(context.Background(), sqlstore.Write{Op: sqlstore.OpUpdate, Key: key, ExpectedRevision: expected, Render: body(data)})
}

func remove(s *sqlstore.Store, key sqlstore.Key, expected int64) (sqlstore.Object, error) {
	return s.Write(context.Background(), sqlstore.Write{Op: sqlstore.OpDelete, Key: key, ExpectedRevision: expected, Render: body("deleted")})
}

func currentRevision(t testing.TB, s *sqlstore.Store) int64 {
	t.Helper()
	rev, err := s.CurrentRevision(context.Background())
	if err != nil {
		t.Fatalf("CurrentRevision: %v", err)
	}
	return rev
}

func wantObject(t testing.TB, got sqlstore.Object, key sqlstore.Key, rev int64, data string) {
	t.Helper()
	want := sqlstore.Object{Key: key, Revision: rev, Value: fmt.Appendf(nil, `{"rv":%d,"data":%q}`, rev, data)}
	if got.Key != want.Key || got.Revision != want.Revision || string(got.Value) != string(want.Value) {
		t.Fatalf("object = %v %d %s, want %v %d %s", got.Key, got.Revision, got.Value, want.Key, want.Revision, want.Value)
	}
}

func TestCreateGetUpdateDelete(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		key := cm("default", "a")

		if rev := currentRevision(t, s); rev != 0 {
			t.Fatalf("new store at revision %d, want 0", rev)
		}
		created := create(t, s, key, "one")
		wantObject(t, created, key, 1, "one")
		got, err := s.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		wantObject(t, got, key, 1, "one")

		updated, err := update(s, key, 1, "two")
		if err != nil {
			t.Fatal(err)
		}
		wantObject(t, updated, key, 2, "two")

		deleted, err := remove(s, key, 2)
		if err != nil {
			t.Fatal(err)
		}
		wantObject(t, deleted, key, 3, "deleted")
		if _, err := s.Get(ctx, key); !errors.Is(err, sqlstore.ErrNotFound) {
			t.Fatalf("Get after delete: %v, want ErrNotFound", err)
		}
		if rev := currentRevision(t, s); rev != 3 {
			t.Fatalf("current revision %d, want 3", rev)
		}
		recreated := create(t, s, key, "again")
		wantObject(t, recreated, key, 4, "again")
	})
}

func TestPreconditionFailuresChangeNothing(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		key := cm("default", "a")
		create(t, s, key, "one")

		cases := []struct {
			name string
			w    sqlstore.Write
			want error
		}{
			{"create existing", sqlstore.Write{Op: sqlstore.OpCreate, Key: key, Render: body("x")}, sqlstore.ErrExists},
			{"update stale", sqlstore.Write{Op: sqlstore.OpUpdate, Key: key, ExpectedRevision: 7, Render: body("x")}, sqlstore.ErrConflict},
			{"delete stale", sqlstore.Write{Op: sqlstore.OpDelete, Key: key, ExpectedRevision: 7, Render: body("x")}, sqlstore.ErrConflict},
			{"update missing", sqlstore.Write{Op: sqlstore.OpUpdate, Key: cm("default", "zz"), ExpectedRevision: 1, Render: body("x")}, sqlstore.ErrNotFound},
			{"delete missing", sqlstore.Write{Op: sqlstore.OpDelete, Key: cm("other", "a"), ExpectedRevision: 1, Render: body("x")}, sqlstore.ErrNotFound},
		}
		for _, c := range cases {
			if _, err := s.Write(ctx, c.w); !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
		}
		renderErr := errors.New("render failed")
		_, err := s.Write(ctx, sqlstore.Write{Op: sqlstore.OpUpdate, Key: key, ExpectedRevision: 1,
			Render: func(int64) ([]byte, error) { return nil, renderErr }})
		if !errors.Is(err, renderErr) {
			t.Errorf("failed render: %v, want %v", err, renderErr)
		}
		_, err = s.Write(ctx, sqlstore.Write{Op: sqlstore.OpUpdate, Key: key, ExpectedRevision: 1,
			Render: func(int64) ([]byte, error) { panic("render bug") }})
		if err == nil || !strings.Contains(err.Error(), "render bug") {
			t.Errorf("panicking render: %v", err)
		}
		if rev := currentRevision(t, s); rev != 1 {
			t.Fatalf("current revision %d after failed writes, want 1", rev)
		}
		got, err := s.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		wantObject(t, got, key, 1, "one")
		// The next successful write takes the next revision: failures left no gap.
		updated, err := update(s, key, 1, "two")
		if err != nil {
			t.Fatal(err)
		}
		wantObject(t, updated, key, 2, "two")
	})
}

func TestInvalidWritesAreRejected(t *testing.T) {
	s := openStore(t, sqltest.SQLiteDSN(t))
	for _, w := range []sqlstore.Write{
		{Op: sqlstore.Op(9), Key: cm("a", "b"), Render: body("x")},
		{Op: sqlstore.OpCreate, Key: cm("a", "b")},
		{Op: sqlstore.OpCreate, Key: cm("a", ""), Render: body("x")},
		{Op: sqlstore.OpCreate, Key: cm("a", "b\x00"), Render: body("x")},
		{Op: sqlstore.OpCreate, Key: cm("a", "\xff"), Render: body("x")},
	} {
		if _, err := s.Write(context.Background(), w); err == nil {
			t.Errorf("Write(%+v) succeeded", w.Key)
		}
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s, err := sqlstore.Open(ctx, sqltest.Database(t, dsn, sqlstore.SQLite, sqlstore.Postgres), sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		create(t, s, cm("default", "a"), "one")
		create(t, s, cm("default", "b"), "two")
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(ctx, sqlstore.Write{Op: sqlstore.OpCreate, Key: cm("x", "y"), Render: body("x")}); !errors.Is(err, sqlstore.ErrClosed) {
			t.Fatalf("Write after Close: %v, want ErrClosed", err)
		}
		s = openStore(t, dsn)
		if rev := currentRevision(t, s); rev != 2 {
			t.Fatalf("revision after reopen %d, want 2", rev)
		}
		got, err := s.Get(ctx, cm("default", "b"))
		if err != nil {
			t.Fatal(err)
		}
		wantObject(t, got, cm("default", "b"), 2, "two")
		wantObject(t, create(t, s, cm("default", "c"), "three"), cm("default", "c"), 3, "three")
	})
}

func TestReady(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Ready(ctx); err != nil {
			t.Fatalf("Ready: %v", err)
		}
	})
}

func TestOpenAndRestoreRefuseNoDatabase(t *testing.T) {
	if _, err := sqlstore.Open(context.Background(), sqlstore.Database{}, sqlstore.Options{}); !errors.Is(err, sqlstore.ErrNoDatabase) {
		t.Fatalf("Open of the zero Database: %v, want ErrNoDatabase", err)
	}
	err := sqlstore.Restore(context.Background(), sqlstore.Database{}, sqlstore.SnapshotHeader{}, func(func(sqlstore.SnapshotObject) error) error { return nil })
	if !errors.Is(err, sqlstore.ErrNoDatabase) {
		t.Fatalf("Restore into the zero Database: %v, want ErrNoDatabase", err)
	}
}

func TestReadsAfterCloseFailWithErrClosed(t *testing.T) {
	s, err := sqlstore.Open(context.Background(), sqlstore.SQLite(sqltest.SQLitePath(t)), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, getErr := s.Get(ctx, cm("ns", "a"))
	_, revErr := s.CurrentRevision(ctx)
	_, listErr := s.List(ctx, sqlstore.ListOptions{Resource: "configmaps"}, func(sqlstore.Object) error { return nil })
	for _, err := range []error{getErr, revErr, listErr, s.Ready(ctx)} {
		if !errors.Is(err, sqlstore.ErrClosed) {
			t.Errorf("read after Close: %v, want ErrClosed", err)
		}
	}
}
