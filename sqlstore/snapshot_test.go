package sqlstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// takeSnapshot reads a whole snapshot into memory.
func takeSnapshot(t *testing.T, s *sqlstore.Store) (sqlstore.SnapshotHeader, []sqlstore.SnapshotObject) {
	t.Helper()
	var header sqlstore.SnapshotHeader
	var objects []sqlstore.SnapshotObject
	err := s.Snapshot(context.Background(), func(h sqlstore.SnapshotHeader) error {
		header = h
		return nil
	}, func(obj sqlstore.SnapshotObject) error {
		objects = append(objects, obj)
		return nil
	})
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	return header, objects
}

// feed returns Restore's objects argument for objects.
func feed(objects []sqlstore.SnapshotObject) func(func(sqlstore.SnapshotObject) error) error {
	return func(each func(sqlstore.SnapshotObject) error) error {
		for _, obj := range objects {
			if err := each(obj); err != nil {
				return err
			}
		}
		return nil
	}
}

// keepWriting creates, updates and deletes configmaps until the returned stop is called.
func keepWriting(t *testing.T, s *sqlstore.Store) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			obj, err := s.Write(context.Background(), sqlstore.Write{Op: sqlstore.OpCreate, Key: cm("busy", fmt.Sprint(i)), Render: body("new")})
			if err == nil && i%2 == 0 {
				_, err = update(s, obj.Key, obj.Revision, "changed")
			}
			if err == nil && i%3 == 0 {
				_, err = remove(s, cm("busy", fmt.Sprint(i/2)), 0)
				if errors.Is(err, sqlstore.ErrConflict) || errors.Is(err, sqlstore.ErrNotFound) {
					err = nil // the key's revision was not looked up: deletes land only by chance
				}
			}
			if err != nil {
				t.Errorf("write while snapshotting: %v", err)
				return
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func TestSnapshotIsConsistentWhileWriting(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		for i := range 200 {
			create(t, s, cm("fixed", fmt.Sprint(i)), "fixed")
			create(t, s, sqlstore.Key{Resource: "namespaces", Name: fmt.Sprint(i)}, "ns")
		}
		stop := keepWriting(t, s)
		defer stop()
		for range 3 {
			header, objects := takeSnapshot(t, s)
			if int64(len(objects)) != header.Objects {
				t.Fatalf("snapshot has %d objects, header says %d", len(objects), header.Objects)
			}
			// The snapshot is the state at its revision, as a list at that revision reads it.
			var want []sqlstore.Object
			for _, resource := range []string{"configmaps", "namespaces"} {
				_, err := s.List(context.Background(), sqlstore.ListOptions{Resource: resource, Revision: header.Revision},
					func(obj sqlstore.Object) error { want = append(want, obj); return nil })
				if err != nil {
					t.Fatalf("List at %d: %v", header.Revision, err)
				}
			}
			if len(want) != len(objects) {
				t.Fatalf("snapshot at %d has %d objects, a list at that revision %d", header.Revision, len(objects), len(want))
			}
			for i, obj := range objects {
				if obj.Key != want[i].Key || obj.Revision != want[i].Revision || !bytes.Equal(obj.Value, want[i].Value) || !obj.Marked {
					t.Fatalf("snapshot object %d is %+v, the list at %d has %+v", i, obj, header.Revision, want[i])
				}
			}
		}
	})
}

func TestRestoreKeepsRevisionsAcrossBackends(t *testing.T) {
	pairs := []struct {
		name     string
		from, to func(testing.TB) string
	}{
		{"sqlite-to-postgres", sqltest.SQLiteDSN, sqltest.PostgresDSN},
		{"postgres-to-sqlite", sqltest.PostgresDSN, sqltest.SQLiteDSN},
	}
	for _, pair := range pairs {
		t.Run(pair.name, func(t *testing.T) {
			source := openStore(t, pair.from(t))
			for i := range 1200 { // more than one insert chunk
				obj := create(t, source, cm(fmt.Sprint("ns", i%3), fmt.Sprint(i)), "v")
				if i%10 == 0 {
					if _, err := remove(source, obj.Key, obj.Revision); err != nil {
						t.Fatal(err)
					}
				}
			}
			header, objects := takeSnapshot(t, source)

			targetDSN := pair.to(t)
			if err := sqlstore.Restore(context.Background(), sqltest.Database(t, targetDSN, sqlstore.SQLite, sqlstore.Postgres), header, feed(objects)); err != nil {
				t.Fatalf("Restore: %v", err)
			}
			target := openStore(t, targetDSN)
			for _, want := range objects {
				got, err := target.Get(context.Background(), want.Key)
				if err != nil || got.Revision != want.Revision || !bytes.Equal(got.Value, want.Value) {
					t.Fatalf("restored %v: %+v, %v; want revision %d", want.Key, got, err, want.Revision)
				}
			}
			if _, restored := takeSnapshot(t, target); len(restored) != len(objects) {
				t.Fatalf("restored %d objects, want %d", len(restored), len(objects))
			}
			current, _ := target.CurrentRevision(context.Background())
			compacted, _ := target.CompactedRevision(context.Background())
			if current != header.Revision || compacted != header.Revision {
				t.Fatalf("restored current, compacted revisions = %d, %d; want %d, %d", current, compacted, header.Revision, header.Revision)
			}
			if obj := create(t, target, cm("ns0", "after"), "v"); obj.Revision != header.Revision+1 {
				t.Fatalf("first write after restore has revision %d, want %d", obj.Revision, header.Revision+1)
			}

			err := sqlstore.Restore(context.Background(), sqltest.Database(t, targetDSN, sqlstore.SQLite, sqlstore.Postgres), header, feed(objects))
			if notEmpty := (*sqlstore.NotEmptyError)(nil); !errors.As(err, &notEmpty) || notEmpty.Current != header.Revision+1 {
				t.Fatalf("Restore into a written database: %v; want a NotEmptyError at revision %d", err, header.Revision+1)
			}
		})
	}
}

func TestFailedRestoreWritesNothing(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		objects := make([]sqlstore.SnapshotObject, 700)
		for i := range objects {
			objects[i] = sqlstore.SnapshotObject{Object: sqlstore.Object{Key: cm("ns", fmt.Sprint(i)), Revision: int64(i + 1), Value: []byte("{}")}}
		}
		header := sqlstore.SnapshotHeader{Revision: 700, Objects: 700}
		db := sqltest.Database(t, dsn, sqlstore.SQLite, sqlstore.Postgres)
		broken := errors.New("the file broke")
		err := sqlstore.Restore(context.Background(), db, header, func(each func(sqlstore.SnapshotObject) error) error {
			if err := feed(objects[:600])(each); err != nil {
				return err
			}
			return broken
		})
		if !errors.Is(err, broken) {
			t.Fatalf("Restore: %v, want %v", err, broken)
		}
		bad := append([]sqlstore.SnapshotObject(nil), objects...)
		bad[5].Revision = 701
		if err := sqlstore.Restore(context.Background(), db, header, feed(bad)); err == nil {
			t.Fatal("Restore accepted an object newer than the snapshot")
		}
		if err := sqlstore.Restore(context.Background(), db, header, feed(objects)); err != nil {
			t.Fatalf("Restore after failed ones: %v", err)
		}
	})
}
