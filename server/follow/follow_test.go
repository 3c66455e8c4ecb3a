package follow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// Resource gives the listed objects in key order and the list's revision, then each change
// after it; when the watch fails, it tells a LapseObserver, and relists.
func TestResourceListsThenFollowsAndRelistsWhenTheWatchFails(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		store := openStore(t, dsn)
		create(t, store, "b")
		create(t, store, "a")
		failing := &failingWatchStore{Store: store, failures: 1}
		o := newRecorder()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			Resource(ctx, failing, slog.New(slog.DiscardHandler), "configmaps", o)
		}()
		defer func() {
			cancel()
			<-done
		}()

		// The first watch fails: the lapse is told, then the resource is listed again.
		o.waitFor(t, "relisting after the failed watch", func(calls []string) bool {
			return slices.Contains(calls, "watch ended") && slices.Index(calls[slices.Index(calls, "watch ended"):], "relisting") > 0
		})
		created := create(t, store, "c")
		o.waitFor(t, "the change after the relist", func(calls []string) bool {
			return slices.Contains(calls, "changed c")
		})
		listed := o.snapshot()
		rev := fmt.Sprintf("list done %d", created.Revision-1)
		want := []string{"relisting", "listed a", "listed b", rev, "watch ended", "relisting", "listed a", "listed b", rev, "changed c"}
		if !slices.Equal(listed, want) {
			t.Errorf("calls %q, want %q", listed, want)
		}
	})
}

// A Narrowed observer's lists carry only the objects it asks for; its changes all come.
func TestResourceNarrowsTheList(t *testing.T) {
	store := openStore(t, sqltest.SQLiteDSN(t))
	create(t, store, "kept")
	create(t, store, "dropped")
	o := &narrowingRecorder{recorder: newRecorder(), contains: []byte(`"kept"`)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Resource(ctx, store, slog.New(slog.DiscardHandler), "configmaps", o)
	}()
	defer func() {
		cancel()
		<-done
	}()
	// Written after the list, so that it comes as a change (one written before would be in the
	// list, and narrowed out of it).
	o.waitFor(t, "the list", func(calls []string) bool {
		return slices.ContainsFunc(calls, func(c string) bool { return strings.HasPrefix(c, "list done") })
	})
	create(t, store, "other")
	o.waitFor(t, "the change", func(calls []string) bool { return slices.Contains(calls, "changed other") })
	if calls := o.snapshot(); slices.Contains(calls, "listed dropped") || !slices.Contains(calls, "listed kept") {
		t.Errorf("calls %q: want only the kept object listed", calls)
	}
}

// Pages reads every object of a namespace, a page at a time, while each page may delete what
// it was given.
func TestPagesReadsEveryObjectWhileTheyAreDeleted(t *testing.T) {
	store := openStore(t, sqltest.SQLiteDSN(t))
	var want []string
	for i := range pageSize + 1 {
		name := fmt.Sprintf("cm-%04d", i)
		create(t, store, name)
		want = append(want, name)
	}
	var got []string
	var pages int
	err := Pages(t.Context(), store, "configmaps", "default", func(page []sqlstore.Object) error {
		pages++
		for _, o := range page {
			got = append(got, o.Name)
			if _, err := store.Write(t.Context(), sqlstore.Write{Op: sqlstore.OpDelete, Key: o.Key, ExpectedRevision: o.Revision,
				Render: func(int64) ([]byte, error) { return o.Value, nil }}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pages != 2 || !slices.Equal(got, want) {
		t.Errorf("%d pages of %d objects, want 2 pages of %d in key order", pages, len(got), len(want))
	}
}

// An item added while queued is queued once; one added while being processed comes again.
func TestQueue(t *testing.T) {
	q := NewQueue[string]()
	q.Add("a")
	q.Add("b")
	q.Add("a")
	if item, _ := q.Next(t.Context()); item != "a" {
		t.Fatalf("first item %q, want a", item)
	}
	q.Add("a") // while a is being processed
	var items []string
	for range 2 {
		item, ok := q.Next(t.Context())
		if !ok {
			t.Fatal("Next ended")
		}
		items = append(items, item)
	}
	if !slices.Equal(items, []string{"b", "a"}) {
		t.Errorf("items %q, want [b a]", items)
	}
	ctx, cancel := context.WithCancel(t.Context())
	q.AddAfter(ctx, "later", time.Millisecond)
	if item, ok := q.Next(t.Context()); !ok || item != "later" {
		t.Errorf("AddAfter: %q %t", item, ok)
	}
	cancel()
	if _, ok := q.Next(ctx); ok {
		t.Error("Next returned an item after ctx ended")
	}
}

func openStore(t *testing.T, dsn string) *sqlstore.Store {
	t.Helper()
	store, err := sqlstore.Open(t.Context(), sqltest.Database(t, dsn, sqlstore.SQLite, sqlstore.Postgres), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// create stores a ConfigMap name in the default namespace.
func create(t *testing.T, store *sqlstore.Store, name string) sqlstore.Object {
	t.Helper()
	value := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"default"}}`, name)
	o, err := store.Write(t.Context(), sqlstore.Write{Op: sqlstore.OpCreate, Key: sqlstore.Key{Resource: "configmaps", Namespace: "default", Name: name},
		Render: func(int64) ([]byte, error) { return value, nil }})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// failingWatchStore fails its first watches.
type failingWatchStore struct {
	*sqlstore.Store
	mu       sync.Mutex
	failures int
}

func (s *failingWatchStore) Watch(ctx context.Context, opts sqlstore.WatchOptions) (*sqlstore.Watcher, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failures > 0 {
		s.failures--
		return nil, errors.New("watch failed")
	}
	return s.Store.Watch(ctx, opts)
}

// recorder is an Observer and LapseObserver that records its calls.
type recorder struct {
	mu      sync.Mutex
	calls   []string
	changed chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{}, 1)} }

func (r *recorder) record(call string) {
	r.mu.Lock()
	r.calls = append(r.calls, call)
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recorder) Relisting()                 { r.record("relisting") }
func (r *recorder) Listed(o sqlstore.Object)   { r.record("listed " + o.Name) }
func (r *recorder) ListDone(revision int64)    { r.record(fmt.Sprintf("list done %d", revision)) }
func (r *recorder) Changed(ev *sqlstore.Event) { r.record("changed " + ev.Object.Name) }
func (r *recorder) WatchEnded()                { r.record("watch ended") }

func (r *recorder) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// waitFor waits until the calls satisfy cond, failing the test after a deadline.
func (r *recorder) waitFor(t *testing.T, what string, cond func(calls []string) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for !cond(r.snapshot()) {
		select {
		case <-r.changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; calls %q", what, r.snapshot())
		}
	}
}

type narrowingRecorder struct {
	*recorder
	contains []byte
}

func (r *narrowingRecorder) NarrowList(opts *sqlstore.ListOptions) {
	opts.ValueContains = [][]byte{r.contains}
}
