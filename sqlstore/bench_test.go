package sqlstore_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sqlkube/sqlkube/dialects/postgres"
	"github.com/sqlkube/sqlkube/dialects/sqlite"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

var kib = bytes.Repeat([]byte("x"), 1024)

// benchBackends runs fn once per backend with a fresh database.
func benchBackends(b *testing.B, fn func(b *testing.B, dsn string)) {
	b.Run("sqlite", func(b *testing.B) { fn(b, sqltest.SQLiteDSN(b)) })
	b.Run("postgres", func(b *testing.B) { fn(b, sqltest.PostgresDSN(b)) })
}

// BenchmarkRawInsert is the raw database limit: 1 KiB rows inserted through the dialect's
// connections with the store's durability settings, one transaction per rowsPerCommit rows.
func BenchmarkRawInsert(b *testing.B) {
	benchBackends(b, func(b *testing.B, dsn string) {
		db, rebind := openRaw(b, dsn)
		if _, err := db.Exec(`CREATE TABLE bench (id BIGINT PRIMARY KEY, value ` + blobType(dsn) + ` NOT NULL)`); err != nil {
			b.Fatal(err)
		}
		var id int64
		for _, rowsPerCommit := range []int{1, 100} {
			b.Run(fmt.Sprintf("rows=%d", rowsPerCommit), func(b *testing.B) {
				insert := rebind(`INSERT INTO bench (id, value) VALUES ` +
					strings.TrimSuffix(strings.Repeat("(?, ?), ", rowsPerCommit), ", "))
				b.SetBytes(int64(rowsPerCommit * len(kib)))
				for b.Loop() {
					args := make([]any, 0, 2*rowsPerCommit)
					for range rowsPerCommit {
						id++
						args = append(args, id, kib)
					}
					tx, err := db.Begin()
					if err != nil {
						b.Fatal(err)
					}
					if _, err := tx.Exec(insert, args...); err != nil {
						b.Fatal(err)
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*rowsPerCommit)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	})
}

func openRaw(b *testing.B, dsn string) (*sql.DB, func(string) string) {
	ctx := context.Background()
	if path, ok := strings.CutPrefix(dsn, "sqlite://"); ok {
		db, err := sqlite.Open(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		return db.Writer, func(q string) string { return q }
	}
	db, err := postgres.Open(ctx, dsn, 4)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db, postgres.Rebind
}

func blobType(dsn string) string {
	if strings.HasPrefix(dsn, "sqlite://") {
		return "BLOB"
	}
	return "BYTEA"
}

// BenchmarkWrite creates 1 KiB objects through Write from 1 and 64 goroutines.
func BenchmarkWrite(b *testing.B) {
	benchBackends(b, func(b *testing.B, dsn string) {
		s := openStore(b, dsn)
		var seq atomic.Int64
		writeOne := func(b *testing.B) {
			key := cm("bench", fmt.Sprintf("obj-%09d", seq.Add(1)))
			_, err := s.Write(context.Background(), sqlstore.Write{Op: sqlstore.OpCreate, Key: key,
				Render: func(int64) ([]byte, error) { return kib, nil }})
			if err != nil {
				b.Error(err)
			}
		}
		b.Run("clients=1", func(b *testing.B) {
			for b.Loop() {
				writeOne(b)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
		})
		b.Run("clients=64", func(b *testing.B) {
			b.SetParallelism(max(1, 64/runtimeProcs()))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					writeOne(b)
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
		})
	})
}

// BenchmarkList lists 10,000 1 KiB objects: all, one page of 500, and a filter matching 1%.
func BenchmarkList(b *testing.B) {
	benchBackends(b, func(b *testing.B, dsn string) {
		s := openStore(b, dsn)
		const n = 10000
		createMany(b, s, n, func(i int) (sqlstore.Key, string) {
			return cm(fmt.Sprintf("ns-%d", i%10), fmt.Sprintf("obj-%05d", i)), fmt.Sprintf("%d%s", i%100, kib)
		})
		onePercent := func(o sqlstore.Object) bool { return bytes.Contains(o.Value, []byte(`"data":"7x`)) }
		cases := []struct {
			name string
			opts sqlstore.ListOptions
			want int
		}{
			{"full", sqlstore.ListOptions{Resource: "configmaps"}, n},
			{"page500", sqlstore.ListOptions{Resource: "configmaps", Limit: 500}, 500},
			{"filter1pct", sqlstore.ListOptions{Resource: "configmaps", Filter: onePercent}, n / 100},
		}
		for _, c := range cases {
			b.Run(c.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					got := 0
					if _, err := s.List(context.Background(), c.opts, func(sqlstore.Object) error { got++; return nil }); err != nil {
						b.Fatal(err)
					}
					if got != c.want {
						b.Fatalf("listed %d objects, want %d", got, c.want)
					}
				}
			})
		}
	})
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// BenchmarkGet reads one object of 1 KiB by key.
func BenchmarkGet(b *testing.B) {
	benchBackends(b, func(b *testing.B, dsn string) {
		s := openStore(b, dsn)
		key := cm("bench", "one")
		if _, err := s.Write(context.Background(), sqlstore.Write{Op: sqlstore.OpCreate, Key: key,
			Render: func(int64) ([]byte, error) { return kib, nil }}); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Get(context.Background(), key); err != nil {
				b.Fatal(err)
			}
		}
	})
}
