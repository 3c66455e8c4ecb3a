package sqlstore

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strings"
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
			s, err := Open(ctx, sqltest.Database(b, backend.dsn(b), SQLite, Postgres), Options{})
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
func addHistory(b testing.TB, s *Store, n int) {
	generate(b, s, n, `INSERT INTO revisions (revision, resource, namespace, name, op, prev_revision, value) `+
		`SELECT 1000000 + i, 'configmaps', 'ns-' || (i % 10), 'obj-' || `+padded(s, "i % 10000", 5)+`, 2, 0, ? FROM g`,
		make([]byte, 100))
}

// generate runs insert, which reads the integers 1..n from table g(i), inside the database.
func generate(t testing.TB, s *Store, n int, insert string, args ...any) {
	series := `WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < ?) `
	if s.db.Name == dialects.Postgres {
		series = `WITH g(i) AS (SELECT generate_series(1, ?::bigint)) `
	}
	_, err := s.db.Writer.ExecContext(context.Background(), s.db.Rebind(series+insert), append([]any{n}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
}

// padded is SQL for the integer expression zero-padded to width digits.
func padded(s *Store, expr string, width int) string {
	if s.db.Name == dialects.Postgres {
		return fmt.Sprintf("lpad((%s)::text, %d, '0')", expr, width)
	}
	return fmt.Sprintf("substr('%0*d' || (%s), -%d, %d)", width, 0, expr, width, width)
}

// openWithObjects opens a store holding n objects of 1 KiB in namespaces ns-0..ns-9, their
// values "i%100" followed by spaces, generated inside the database. It is closed when t ends.
func openWithObjects(t testing.TB, dsn string, n int) *Store {
	ctx := context.Background()
	s, err := Open(ctx, sqltest.Database(t, dsn, SQLite, Postgres), Options{})
	if err != nil {
		t.Fatal(err)
	}
	name := `'obj-' || ` + padded(s, "i", 6)
	value := `CAST(substr((i % 100) || '` + strings.Repeat(" ", 1024) + `', 1, 1024) AS ` + blob(s) + `)`
	generate(t, s, n, `INSERT INTO revisions (revision, resource, namespace, name, op, prev_revision, value) `+
		`SELECT i, 'configmaps', 'ns-' || (i % 10), `+name+`, 1, 0, `+value+` FROM g`)
	generate(t, s, n, `INSERT INTO objects (resource, namespace, name, revision) SELECT 'configmaps', 'ns-' || (i % 10), `+name+`, i FROM g`)
	if _, err := s.db.Writer.ExecContext(ctx, s.db.Rebind(`UPDATE meta SET current = ?`), n); err != nil {
		t.Fatal(err)
	}
	// Reopen, so that the change feed starts after the generated rows instead of keeping them
	// in its window of recent events.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(ctx, sqltest.Database(t, dsn, SQLite, Postgres), Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func blob(s *Store) string {
	if s.db.Name == dialects.Postgres {
		return "BYTEA"
	}
	return "BLOB"
}

// TestListStreams lists 100,000 objects of 1 KiB (100 MB) and checks that the heap never holds
// more than a small part of them.
func TestListStreams(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		const n = 100000
		s := openWithObjects(t, dsn, n)
		// The live heap, measured after a collection, must not grow with the objects listed.
		liveHeap := func() int64 {
			var m runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m)
			return int64(m.HeapAlloc)
		}
		before := liveHeap()
		listed := 0
		_, err := s.List(context.Background(), ListOptions{Resource: "configmaps"}, func(o Object) error {
			listed++
			if listed%25000 == 0 {
				if grew := liveHeap() - before; grew > 16<<20 {
					t.Fatalf("the live heap grew by %d MB after listing %d objects", grew>>20, listed)
				}
			}
			return nil
		})
		if err != nil || listed != n {
			t.Fatalf("listed %d objects: %v", listed, err)
		}
	})
}

// BenchmarkList100k lists 100,000 objects of 1 KiB: all, one page of 500, one namespace (10%),
// and a filter matching 1%.
func BenchmarkList100k(b *testing.B) {
	for _, backend := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"sqlite", sqltest.SQLiteDSN}, {"postgres", sqltest.PostgresDSN}} {
		b.Run(backend.name, func(b *testing.B) {
			s := openWithObjects(b, backend.dsn(b), 100000)
			onePercent := func(o Object) bool { return bytes.HasPrefix(o.Value, []byte("7 ")) }
			for _, c := range []struct {
				name string
				opts ListOptions
				want int
			}{
				{"full", ListOptions{Resource: "configmaps"}, 100000},
				{"page500", ListOptions{Resource: "configmaps", Limit: 500}, 500},
				{"namespace", ListOptions{Resource: "configmaps", Namespace: "ns-3"}, 10000},
				{"filter1pct", ListOptions{Resource: "configmaps", Filter: onePercent}, 1000},
			} {
				b.Run(c.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						got := 0
						if _, err := s.List(context.Background(), c.opts, func(Object) error { got++; return nil }); err != nil || got != c.want {
							b.Fatalf("listed %d, want %d: %v", got, c.want, err)
						}
					}
				})
			}
		})
	}
}
