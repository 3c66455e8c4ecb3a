package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// writeHistory makes a history of creates, updates and deletes over a few keys and returns the
// list at each revision, read before any compaction.
func writeHistory(t *testing.T, s *sqlstore.Store) map[int64][]string {
	t.Helper()
	revs := map[sqlstore.Key]int64{}
	for i := range 60 {
		key := cm(fmt.Sprintf("ns%d", i%2), fmt.Sprintf("k%d", i%7))
		rev, exists := revs[key]
		switch {
		case !exists:
			revs[key] = create(t, s, key, fmt.Sprint(i)).Revision
		case i%5 == 0:
			mustRemove(t, s, key, rev)
			delete(revs, key)
		default:
			revs[key] = mustUpdate(t, s, key, rev, fmt.Sprint(i)).Revision
		}
	}
	states := map[int64][]string{}
	for rev := int64(1); rev <= currentRevision(t, s); rev++ {
		objs, _ := listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", Revision: rev})
		states[rev] = valueNames(objs)
	}
	return states
}

func valueNames(objs []sqlstore.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, fmt.Sprintf("%s/%s@%d=%s", o.Namespace, o.Name, o.Revision, o.Value))
	}
	return out
}

func TestCompaction(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		states := writeHistory(t, s)
		current := currentRevision(t, s)

		for _, at := range []int64{20, 35, 35, 10} {
			if err := s.Compact(ctx, at); err != nil {
				t.Fatalf("Compact(%d): %v", at, err)
			}
		}
		compacted, err := s.CompactedRevision(ctx)
		if err != nil || compacted != 35 {
			t.Fatalf("CompactedRevision = %d, %v; want 35 (never moved backwards)", compacted, err)
		}
		for _, rev := range []int64{1, 20, 34} {
			_, err := s.List(ctx, sqlstore.ListOptions{Resource: "configmaps", Revision: rev}, func(sqlstore.Object) error { return nil })
			var compactedErr *sqlstore.CompactedError
			if !errors.As(err, &compactedErr) || *compactedErr != (sqlstore.CompactedError{Requested: rev, Compacted: 35}) {
				t.Fatalf("List at compacted revision %d: %v", rev, err)
			}
		}
		for rev := int64(35); rev <= current; rev++ {
			objs, _ := listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", Revision: rev})
			if got := valueNames(objs); !slices.Equal(got, states[rev]) {
				t.Fatalf("list at %d after compaction:\n%v\nwant\n%v", rev, got, states[rev])
			}
		}
		var future *sqlstore.FutureRevisionError
		if err := s.Compact(ctx, current+1); !errors.As(err, &future) {
			t.Fatalf("Compact beyond the current revision: %v", err)
		}
	})
}

func TestBackgroundCompaction(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		s := openStoreWith(t, dsn, sqlstore.Options{Retention: 2 * time.Second, CompactionInterval: 200 * time.Millisecond})
		key := cm("ns", "a")
		rev := create(t, s, key, "v").Revision
		for range 5 {
			rev = mustUpdate(t, s, key, rev, "v").Revision
		}
		written := rev
		deadline := time.Now().Add(20 * time.Second)
		for {
			compacted, err := s.CompactedRevision(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if compacted == written {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("compacted revision still %d, want %d", compacted, written)
			}
			waitFor(50 * time.Millisecond)
		}
		got, err := s.Get(context.Background(), key)
		if err != nil || got.Revision != written {
			t.Fatalf("Get after compaction: %+v, %v", got, err)
		}
		objs, _ := listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", Revision: written})
		if len(objs) != 1 || objs[0].Revision != written {
			t.Fatalf("list at the compacted revision: %v", revisionNames(objs))
		}
	})
}

// waitFor pauses a polling loop; it synchronises nothing.
func waitFor(d time.Duration) { <-time.After(d) }

func TestNewerSchemaIsRefused(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		s, err := sqlstore.Open(context.Background(), sqltest.Database(t, dsn, sqlstore.SQLite, sqlstore.Postgres), sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		execRaw(t, dsn, "UPDATE schema_migrations SET version = 99")
		_, err = sqlstore.Open(context.Background(), sqltest.Database(t, dsn, sqlstore.SQLite, sqlstore.Postgres), sqlstore.Options{})
		if err == nil || !strings.Contains(err.Error(), "database schema version 99 is newer than this sqlkube supports (2): upgrade sqlkube") {
			t.Fatalf("Open on a newer schema: %v", err)
		}
		execRaw(t, dsn, "UPDATE schema_migrations SET version = 1, dirty = true")
		_, err = sqlstore.Open(context.Background(), sqltest.Database(t, dsn, sqlstore.SQLite, sqlstore.Postgres), sqlstore.Options{})
		if err == nil || !strings.Contains(err.Error(), "database schema is dirty at version 1") {
			t.Fatalf("Open on a dirty schema: %v", err)
		}
	})
}

func execRaw(t *testing.T, dsn, statement string) {
	t.Helper()
	if _, err := sqltest.Open(t, dsn).Exec(statement); err != nil {
		t.Fatalf("%s: %v", statement, err)
	}
}

// TestCompactionVacuumsOnPostgreSQL: on PostgreSQL a compaction that removed rows vacuums the
// tables, so that later writes reuse the space of the rows it deleted even when autovacuum is
// off (as on the test machines' server) or behind. A compaction that removed nothing does not.
func TestCompactionVacuumsOnPostgreSQL(t *testing.T) {
	dsn := sqltest.PostgresDSN(t)
	s := openStore(t, dsn)
	db := sqltest.Open(t, dsn)
	ctx := context.Background()
	writeHistory(t, s)
	current := currentRevision(t, s)
	for _, at := range []int64{current, current} {
		if err := s.Compact(ctx, at); err != nil {
			t.Fatalf("Compact(%d): %v", at, err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		// Statistics are published a moment after the statement ends: wait for them.
		var revisions, objects int64
		err := db.QueryRowContext(ctx, `SELECT
			(SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = 'revisions'),
			(SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = 'objects')`).Scan(&revisions, &objects)
		if err != nil {
			t.Fatal(err)
		}
		if revisions == 1 && objects == 1 {
			return
		}
		if revisions > 1 || objects > 1 || time.Now().After(deadline) {
			t.Fatalf("vacuums of revisions %d, of objects %d after two compactions, one of which removed rows; want 1 each", revisions, objects)
		}
		waitFor(50 * time.Millisecond)
	}
}
