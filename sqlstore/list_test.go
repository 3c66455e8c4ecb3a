package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// listAll collects a list's objects.
func listAll(t testing.TB, s *sqlstore.Store, opts sqlstore.ListOptions) ([]sqlstore.Object, sqlstore.ListResult) {
	t.Helper()
	var objs []sqlstore.Object
	res, err := s.List(context.Background(), opts, func(o sqlstore.Object) error {
		objs = append(objs, o)
		return nil
	})
	if err != nil {
		t.Fatalf("List(%+v): %v", opts, err)
	}
	return objs, res
}

func names(objs []sqlstore.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Namespace+"/"+o.Name)
	}
	return out
}

func TestListByteOrder(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		for _, name := range []string{"b", "ab", "a-b", "a", "B", "a.b", "Z", "é"} {
			create(t, s, cm("ns", name), name)
		}
		create(t, s, cm("NS", "x"), "x")
		create(t, s, cm("ns-1", "x"), "x")
		create(t, s, sqlstore.Key{Resource: "secrets", Namespace: "ns", Name: "hidden"}, "x")

		objs, res := listAll(t, s, sqlstore.ListOptions{Resource: "configmaps"})
		want := []string{"NS/x", "ns/B", "ns/Z", "ns/a", "ns/a-b", "ns/a.b", "ns/ab", "ns/b", "ns/é", "ns-1/x"}
		if got := names(objs); !slices.Equal(got, want) {
			t.Fatalf("list order %v, want %v", got, want)
		}
		if res != (sqlstore.ListResult{Revision: 11}) {
			t.Fatalf("result %+v", res)
		}
		objs, _ = listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", Namespace: "ns", After: cm("ns", "a-b")})
		if got, want := names(objs), []string{"ns/a.b", "ns/ab", "ns/b", "ns/é"}; !slices.Equal(got, want) {
			t.Fatalf("list after a-b %v, want %v", got, want)
		}
		objs, _ = listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", After: cm("ns", "é")})
		if got, want := names(objs), []string{"ns-1/x"}; !slices.Equal(got, want) {
			t.Fatalf("list after ns/é %v, want %v", got, want)
		}
		objs, _ = listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", Namespace: "ns", After: cm("NS", "x")})
		if len(objs) != 9-1 {
			t.Fatalf("list of ns after a key of an earlier namespace: %v", names(objs))
		}
		objs, _ = listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", Namespace: "ns", After: cm("ns-1", "a")})
		if len(objs) != 0 {
			t.Fatalf("list of ns after a key of a later namespace: %v", names(objs))
		}
	})
}

func TestListPagination(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		var want []string
		for ns := range 3 {
			for i := range 7 {
				key := cm(fmt.Sprintf("ns%d", ns), fmt.Sprintf("obj-%02d", i))
				create(t, s, key, "v")
				want = append(want, key.Namespace+"/"+key.Name)
			}
		}
		snapshot := currentRevision(t, s)
		// Each page counts the keys after it, or derives the count from the one before.
		for _, carry := range []bool{false, true} {
			var got []string
			after, known := sqlstore.Key{}, int64(0)
			for page := 0; ; page++ {
				// Writes between pages must not show up in a list continued at its snapshot.
				create(t, s, cm("ns1", fmt.Sprintf("late-%t-%d", carry, page)), "late")
				opts := sqlstore.ListOptions{Resource: "configmaps", Revision: snapshot, After: after, Limit: 4}
				if carry {
					opts.KnownRemaining = known
				}
				objs, res := listAll(t, s, opts)
				got = append(got, names(objs)...)
				if res.Revision != snapshot {
					t.Fatalf("page %d at revision %d, want %d", page, res.Revision, snapshot)
				}
				if !res.More {
					if res.Remaining != 0 {
						t.Fatalf("last page: Remaining %d", res.Remaining)
					}
					break
				}
				if wantRemaining := int64(len(want) - len(got)); res.Remaining != wantRemaining {
					t.Fatalf("carry %t, page %d: Remaining %d, want %d", carry, page, res.Remaining, wantRemaining)
				}
				after, known = objs[len(objs)-1].Key, res.Remaining
			}
			if !slices.Equal(got, want) {
				t.Fatalf("paged list %v, want %v", got, want)
			}
		}
	})
}

func TestListLimitAndFilter(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		createMany(t, s, 2500, func(i int) (sqlstore.Key, string) {
			return cm("ns", fmt.Sprintf("obj-%04d", i)), fmt.Sprintf("v%d", i%100)
		})
		matchesV7 := func(o sqlstore.Object) bool { return strings.Contains(string(o.Value), `"v7"`) }

		// The filter applies before the limit: 25 objects match, found across chunks.
		objs, res := listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", Filter: matchesV7})
		if len(objs) != 25 || res.More {
			t.Fatalf("filtered list: %d objects, result %+v", len(objs), res)
		}
		objs, res = listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", Filter: matchesV7, Limit: 10})
		if len(objs) != 10 || objs[9].Name != "obj-0907" || !res.More || res.Remaining != -1 {
			t.Fatalf("filtered, limited list: %v, result %+v", names(objs), res)
		}
		// The last match ends the keys that match but not the keys: More says further keys exist.
		objs, res = listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", Filter: matchesV7, Limit: 25})
		if len(objs) != 25 || !res.More {
			t.Fatalf("list limited to all matches: %d, result %+v", len(objs), res)
		}
		objs, res = listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", Limit: 2500})
		if len(objs) != 2500 || res.More || res.Remaining != 0 {
			t.Fatalf("list limited to all: %d, result %+v", len(objs), res)
		}
		objs, res = listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", Limit: 1100})
		if len(objs) != 1100 || !res.More || res.Remaining != 1400 {
			t.Fatalf("list of 1100: %d, result %+v", len(objs), res)
		}
		// The largest limit a client can send is no limit (the row read past it must not
		// overflow), with and without a ValueContains that the database evaluates.
		for _, opts := range []sqlstore.ListOptions{{Limit: math.MaxInt64}, {Limit: math.MaxInt64, ValueContains: [][]byte{[]byte(`"v7"`)}}} {
			opts.Resource = "configmaps"
			objs, res = listAll(t, s, opts)
			if want := 2500 - 2475*len(opts.ValueContains); len(objs) != want || res.More {
				t.Fatalf("list limited to MaxInt64 (%v): %d, result %+v; want %d", opts.ValueContains, len(objs), res, want)
			}
		}
	})
}

func TestListEachErrorStops(t *testing.T) {
	s := openStore(t, sqltest.SQLiteDSN(t))
	create(t, s, cm("ns", "a"), "a")
	create(t, s, cm("ns", "b"), "b")
	stop := errors.New("stop")
	calls := 0
	_, err := s.List(context.Background(), sqlstore.ListOptions{Resource: "configmaps"}, func(sqlstore.Object) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("List: %v after %d calls, want %v after 1", err, calls, stop)
	}
}

func TestListAtOldRevisions(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		a, b, c := cm("ns", "a"), cm("ns", "b"), cm("other", "c")
		create(t, s, a, "a1")        // 1
		create(t, s, b, "b1")        // 2
		mustUpdate(t, s, a, 1, "a3") // 3
		mustRemove(t, s, b, 2)       // 4
		create(t, s, c, "c5")        // 5
		create(t, s, b, "b6")        // 6
		mustUpdate(t, s, c, 5, "c7") // 7
		states := map[int64][]string{
			1: {"ns/a@1"},
			2: {"ns/a@1", "ns/b@2"},
			3: {"ns/a@3", "ns/b@2"},
			4: {"ns/a@3"},
			5: {"ns/a@3", "other/c@5"},
			6: {"ns/a@3", "ns/b@6", "other/c@5"},
			7: {"ns/a@3", "ns/b@6", "other/c@7"},
		}
		for rev, want := range states {
			objs, res := listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", Revision: rev})
			if got := revisionNames(objs); !slices.Equal(got, want) || res.Revision != rev {
				t.Errorf("list at %d: %v (revision %d), want %v", rev, got, res.Revision, want)
			}
		}
		objs, _ := listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", Namespace: "ns", Revision: 2, Limit: 1})
		if got := revisionNames(objs); !slices.Equal(got, []string{"ns/a@1"}) {
			t.Errorf("namespaced list at 2: %v", got)
		}
		_, err := s.List(context.Background(), sqlstore.ListOptions{Resource: "configmaps", Revision: 8}, func(sqlstore.Object) error { return nil })
		var future *sqlstore.FutureRevisionError
		if !errors.As(err, &future) || *future != (sqlstore.FutureRevisionError{Requested: 8, Current: 7}) {
			t.Fatalf("list at a future revision: %v", err)
		}
	})
}

func revisionNames(objs []sqlstore.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, fmt.Sprintf("%s/%s@%d", o.Namespace, o.Name, o.Revision))
	}
	return out
}

// createMany creates n objects from 32 goroutines, so their writes share commits.
func createMany(t testing.TB, s *sqlstore.Store, n int, object func(i int) (sqlstore.Key, string)) {
	t.Helper()
	const workers = 32
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := w; i < n; i += workers {
				key, data := object(i)
				if _, err := s.Write(context.Background(), sqlstore.Write{Op: sqlstore.OpCreate, Key: key, Render: body(data)}); err != nil {
					errs <- fmt.Errorf("create %v: %w", key, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func mustUpdate(t testing.TB, s *sqlstore.Store, key sqlstore.Key, expected int64, data string) sqlstore.Object {
	t.Helper()
	obj, err := update(s, key, expected, data)
	if err != nil {
		t.Fatalf("update %v: %v", key, err)
	}
	return obj
}

func mustRemove(t testing.TB, s *sqlstore.Store, key sqlstore.Key, expected int64) sqlstore.Object {
	t.Helper()
	obj, err := remove(s, key, expected)
	if err != nil {
		t.Fatalf("delete %v: %v", key, err)
	}
	return obj
}

// TestListValueContains: the database keeps the objects whose value holds one of the byte
// strings (case-sensitive), across chunks, with Limit and Filter, at the latest revision and at
// an older one; a Bulk list reads the same.
func TestListValueContains(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		createMany(t, s, 2500, func(i int) (sqlstore.Key, string) {
			return cm("ns", fmt.Sprintf("obj-%04d", i)), fmt.Sprintf("v%d", i%100)
		})
		v7orV42 := [][]byte{[]byte(`"v7"`), []byte(`"v42"`)}
		objs, res := listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", ValueContains: v7orV42})
		if len(objs) != 50 || res.More || objs[0].Name != "obj-0007" || objs[1].Name != "obj-0042" {
			t.Fatalf("list of v7 or v42: %d objects %v, result %+v", len(objs), names(objs[:min(2, len(objs))]), res)
		}
		bulk, _ := listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", ValueContains: v7orV42, Bulk: true})
		if !slices.Equal(names(bulk), names(objs)) {
			t.Fatalf("a bulk list (on its own connections) differs: %v", names(bulk))
		}
		objs, res = listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", ValueContains: v7orV42, Limit: 3})
		if got := names(objs); !slices.Equal(got, []string{"ns/obj-0007", "ns/obj-0042", "ns/obj-0107"}) || !res.More || res.Remaining != -1 {
			t.Fatalf("limited list: %v, result %+v", got, res)
		}
		only42 := func(o sqlstore.Object) bool { return strings.Contains(string(o.Value), `"v42"`) }
		objs, _ = listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", ValueContains: v7orV42, Filter: only42})
		if len(objs) != 25 {
			t.Fatalf("with a filter: %d objects", len(objs))
		}
		if objs, _ = listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", ValueContains: [][]byte{[]byte(`"V7"`)}}); len(objs) != 0 {
			t.Fatalf("case-insensitive match: %v", names(objs))
		}
		before := res.Revision
		mustUpdate(t, s, cm("ns", "obj-0007"), objs0007Revision(t, s), "changed")
		objs, _ = listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", ValueContains: [][]byte{[]byte(`"v7"`)}})
		if len(objs) != 24 {
			t.Fatalf("after an update, latest: %d objects", len(objs))
		}
		objs, _ = listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", ValueContains: [][]byte{[]byte(`"v7"`)}, Revision: before})
		if len(objs) != 25 || objs[0].Name != "obj-0007" {
			t.Fatalf("at the revision before the update: %d objects", len(objs))
		}
	})
}

func objs0007Revision(t *testing.T, s *sqlstore.Store) int64 {
	objs, _ := listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", Namespace: "ns", After: cm("ns", "obj-0006"), Limit: 1})
	return objs[0].Revision
}

// TestListMarked: a Marked list returns the objects Mark picked as last written, at the latest
// revision; at an older one, every object.
func TestListMarked(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		keep := func(value []byte) bool { return strings.Contains(string(value), "keep") }
		s := openStoreWith(t, dsn, sqlstore.Options{Mark: keep})
		createMany(t, s, 1500, func(i int) (sqlstore.Key, string) {
			if i%500 == 7 {
				return cm("ns", fmt.Sprintf("obj-%04d", i)), "keep"
			}
			return cm("ns", fmt.Sprintf("obj-%04d", i)), "drop"
		})
		marked := func(opts sqlstore.ListOptions) []string {
			opts.Resource, opts.Marked = "configmaps", true
			objs, _ := listAll(t, s, opts)
			return names(objs)
		}
		if got := marked(sqlstore.ListOptions{}); !slices.Equal(got, []string{"ns/obj-0007", "ns/obj-0507", "ns/obj-1007"}) {
			t.Fatalf("marked list: %v", got)
		}
		objs, _ := listAll(t, s, sqlstore.ListOptions{Resource: "configmaps", Namespace: "ns", After: cm("ns", "obj-0506"), Limit: 1})
		before := mustUpdate(t, s, objs[0].Key, objs[0].Revision, "no longer").Revision - 1
		created := create(t, s, cm("ns", "late"), "keep now")
		if got := marked(sqlstore.ListOptions{Bulk: true}); !slices.Equal(got, []string{"ns/late", "ns/obj-0007", "ns/obj-1007"}) {
			t.Fatalf("marked list after an update and a create: %v", got)
		}
		if got := marked(sqlstore.ListOptions{Limit: 1}); !slices.Equal(got, []string{"ns/late"}) {
			t.Fatalf("limited marked list: %v", got)
		}
		if got := marked(sqlstore.ListOptions{Revision: before}); len(got) != 1500 {
			t.Fatalf("marked list at an older revision: %d objects, want all 1500", len(got))
		}
		mustRemove(t, s, cm("ns", "late"), created.Revision)
		if got := marked(sqlstore.ListOptions{}); !slices.Equal(got, []string{"ns/obj-0007", "ns/obj-1007"}) {
			t.Fatalf("marked list after a delete: %v", got)
		}
	})
}
