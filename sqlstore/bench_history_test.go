package sqlstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/sqlkube/sqlkube/dialects"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// BenchmarkListLatestWithHistory lists 10,000 live objects at the latest revision, with and
// without 1,000,000 older log rows of the same keys: the history must not slow the list.
func BenchmarkListLatestWithHistory(b *testing.B) {
	for _, backend := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"sqlite", sqltest.SQLiteDSN}, {"postgres", sqltest.PostgresDSN}} {
		b.Run(backend.name, func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, Options{DSN: backend.dsn(b)})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			createLive(b, s, 10000)
			list := func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					n := 0
					if _, err := s.List(ctx, ListOptions{Resource: "configmaps"}, func(Object) error { n++; return nil }); err != nil || n != 10000 {
						b.Fatalf("listed %d: %v", n, err)
					}
				}
			}
			b.Run("history=0", list)
			addHistory(b, s, 1000000)
			b.Run("history=1M", list)
		})
	}
}

func createLive(b *testing.B, s *Store, n int) {
	value := make([]byte, 1024)
	done := make(chan error, 32)
	for w := range 32 {
		go func() {
			for i := w; i < n; i += 32 {
				_, err := s.Write(context.Background(), Write{Op: OpCreate, Key: Key{"configmaps", fmt.Sprintf("ns-%d", i%10), fmt.Sprintf("obj-%05d", i)},
					Render: func(int64) ([]byte, error) { return value, nil }})
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 32 {
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// addHistory inserts n superseded log rows (100-byte updates of the live keys, numbered after
// the current revision), generated inside the database.
func addHistory(b *testing.B, s *Store, n int) {
	series := `WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < ?) `
	if s.db.name == dialects.Postgres {
		series = `WITH g(i) AS (SELECT generate_series(1, ?::bigint)) `
	}
	_, err := s.db.writer.ExecContext(context.Background(), s.db.rebind(series+
		`INSERT INTO revisions (revision, resource, namespace, name, op, prev_revision, value) `+
		`SELECT 1000000 + i, 'configmaps', 'ns-' || (i % 10), 'obj-' || substr('0000' || (i % 10000), -5, 5), 2, 0, ?`+
		` FROM g`), n, make([]byte, 100))
	if err != nil {
		b.Fatal(err)
	}
}
