package sqlstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// TestCompactionDeletesHistory checks which log rows compaction keeps: every row above the
// compacted revision and, at or below it, only the newest row of each key alive at it.
func TestCompactionDeletesHistory(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s, err := Open(ctx, sqltest.Database(t, dsn, SQLite, Postgres), Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		write := func(op Op, name string, expected int64) int64 {
			obj, err := s.Write(ctx, Write{Op: op, Key: Key{Resource: "r", Namespace: "ns", Name: name}, ExpectedRevision: expected,
				Render: func(rev int64) ([]byte, error) { return fmt.Appendf(nil, "%d", rev), nil }})
			if err != nil {
				t.Fatal(err)
			}
			return obj.Revision
		}
		write(OpCreate, "a", 0) // 1: superseded by 2
		write(OpUpdate, "a", 1) // 2: kept, a's newest at 5
		write(OpCreate, "b", 0) // 3: superseded by its delete
		write(OpDelete, "b", 3) // 4: a delete at or below 5: gone
		write(OpCreate, "c", 0) // 5: kept
		write(OpUpdate, "c", 5) // 6: above 5: kept
		write(OpCreate, "b", 0) // 7: kept
		if err := s.Compact(ctx, 5); err != nil {
			t.Fatal(err)
		}
		rows, err := s.db.Reader.QueryContext(ctx, `SELECT revision FROM revisions ORDER BY revision`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var kept []int64
		for rows.Next() {
			var rev int64
			if err := rows.Scan(&rev); err != nil {
				t.Fatal(err)
			}
			kept = append(kept, rev)
		}
		if fmt.Sprint(kept) != "[2 5 6 7]" {
			t.Fatalf("log rows after compacting to 5: %v, want [2 5 6 7]", kept)
		}
	})
}
