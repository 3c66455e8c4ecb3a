package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/follow"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

func storedNamespace(name, phase string, revision int64) sqlstore.Object {
	return sqlstore.Object{
		Key:      sqlstore.Key{Resource: "namespaces", Name: name},
		Revision: revision,
		Value:    fmt.Appendf(nil, `{"metadata":{"name":%q},"status":{"phase":%q}}`, name, phase),
	}
}

func wantLookup(t *testing.T, c *namespaceCache, name string, wantTerminating, wantOK bool) {
	t.Helper()
	if terminating, ok := c.lookup(name); terminating != wantTerminating || ok != wantOK {
		t.Errorf("lookup(%s) = %v, %v; want %v, %v", name, terminating, ok, wantTerminating, wantOK)
	}
}

// The cache answers only once listed, only for namespaces it holds, and not while it is behind
// this process's latest namespace write or between a watch's end and the next list.
func TestNamespaceCacheAnswersOnlyWhenCurrent(t *testing.T) {
	c := newNamespaceCache()
	wantLookup(t, c, "a", false, false) // not listed yet

	feedList(c, 10, storedNamespace("a", "Active", 3), storedNamespace("b", "Terminating", 5))
	wantLookup(t, c, "a", false, true)
	wantLookup(t, c, "b", true, true)
	wantLookup(t, c, "c", false, false) // a miss: storage is read

	c.Changed(&sqlstore.Event{Op: sqlstore.OpCreate, Revision: 11, Object: storedNamespace("c", "Active", 11)})
	wantLookup(t, c, "c", false, true)

	// This process marked a terminating at 13; the cache has not seen it yet.
	c.wrote(13)
	c.wrote(12) // an older write finishing later changes nothing
	wantLookup(t, c, "a", false, false)
	c.Changed(&sqlstore.Event{Op: sqlstore.OpUpdate, Revision: 12, Object: storedNamespace("c", "Active", 12)})
	wantLookup(t, c, "a", false, false)
	c.Changed(&sqlstore.Event{Op: sqlstore.OpUpdate, Revision: 13, Object: storedNamespace("a", "Terminating", 13)})
	wantLookup(t, c, "a", true, true)

	c.Changed(&sqlstore.Event{Op: sqlstore.OpDelete, Revision: 14, Object: storedNamespace("b", "Terminating", 14)})
	wantLookup(t, c, "b", false, false)

	c.WatchEnded()
	wantLookup(t, c, "a", false, false)
	feedList(c, 20, storedNamespace("a", "Active", 20))
	wantLookup(t, c, "a", false, true)
	wantLookup(t, c, "c", false, false) // gone while the watch was down
}

// An object that does not decode is not cached: the check reads storage, which reports it.
func TestNamespaceCacheLeavesOutUndecodable(t *testing.T) {
	c := newNamespaceCache()
	bad := sqlstore.Object{Key: sqlstore.Key{Resource: "namespaces", Name: "bad"}, Value: []byte(`{"status":7}`)}
	feedList(c, 2, bad, storedNamespace("a", "Active", 1))
	wantLookup(t, c, "bad", false, false)
	c.Changed(&sqlstore.Event{Op: sqlstore.OpUpdate, Revision: 3, Object: sqlstore.Object{Key: sqlstore.Key{Resource: "namespaces", Name: "a"}, Value: bad.Value}})
	wantLookup(t, c, "a", false, false)
}

// unlistedNamespaces is a store on which no follower ever gets its list of namespaces, so that
// a test drives the registry's namespace cache by hand.
type unlistedNamespaces struct{ Storage }

func (s unlistedNamespaces) List(ctx context.Context, opts sqlstore.ListOptions, each func(sqlstore.Object) error) (sqlstore.ListResult, error) {
	if opts.Resource == "namespaces" {
		<-ctx.Done()
		return sqlstore.ListResult{}, ctx.Err()
	}
	return s.Storage.List(ctx, opts, each)
}

// testTypes are the built-in namespaces and configmaps types.
func testTypes() (namespaces, configMaps *resource.Resource) {
	builtins := builtin.Resources(func(*resource.Resource) {}, nil)
	return builtins[0], builtins[1]
}

// newTestRegistry is a registry on store until the test ends.
func newTestRegistry(t *testing.T, store Storage) *Registry {
	t.Helper()
	namespaces, _ := testTypes()
	r, err := New(t.Context(), store, namespaces, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func createNamed(t *testing.T, r *Registry, res *resource.Resource, namespace, name string) error {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetName(name)
	_, _, err := r.Create(t.Context(), Ref{Resource: res, Namespace: namespace}, obj, &metav1.CreateOptions{})
	return err
}

func mustCreate(t *testing.T, r *Registry, res *resource.Resource, namespace, name string) {
	t.Helper()
	if err := createNamed(t, r, res, namespace, name); err != nil {
		t.Fatalf("creating %s %s/%s: %v", res.Name, namespace, name, err)
	}
}

// listNamespacesInto gives the cache the stored namespaces, as its follower would, and returns
// the list's revision.
func listNamespacesInto(t *testing.T, store Storage, c *namespaceCache) int64 {
	t.Helper()
	c.Relisting()
	list, err := store.List(t.Context(), sqlstore.ListOptions{Resource: "namespaces"}, func(o sqlstore.Object) error {
		c.Listed(o)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.ListDone(list.Revision)
	return list.Revision
}

// A create right after this registry deleted the namespace is refused, though the cache has not
// seen the deletion; a namespace another replica created is found though the cache lacks it.
func TestNamespaceCheckWithLaggingCache(t *testing.T) {
	store := openTestStore(t, sqltest.SQLiteDSN(t))
	reg := newTestRegistry(t, unlistedNamespaces{store})
	namespaces, configMaps := testTypes()
	mustCreate(t, reg, namespaces, "", "demo")
	listNamespacesInto(t, store, reg.namespaces)
	wantLookup(t, reg.namespaces, "demo", false, true)
	mustCreate(t, reg, configMaps, "demo", "before")

	if _, _, err := reg.Delete(t.Context(), Ref{Resource: namespaces, Name: "demo"}, &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantLookup(t, reg.namespaces, "demo", false, false) // behind the deletion
	err := createNamed(t, reg, configMaps, "demo", "new")
	wantStatus(t, err, metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
		Message: `configmaps "new" is forbidden: unable to create new content in namespace demo because it is being terminated`,
		Details: &metav1.StatusDetails{Name: "new", Kind: "configmaps",
			Causes: []metav1.StatusCause{{Type: "NamespaceTerminating", Message: "namespace demo is being terminated", Field: "metadata.namespace"}}},
	})

	// Caught up, the cache misses what another replica creates: storage is read.
	listNamespacesInto(t, store, reg.namespaces)
	wantLookup(t, reg.namespaces, "demo", true, true)
	other := newTestRegistry(t, store)
	mustCreate(t, other, namespaces, "", "elsewhere")
	mustCreate(t, reg, configMaps, "elsewhere", "found")
	err = createNamed(t, reg, configMaps, "nowhere", "x")
	if !apierrors.IsNotFound(err) || err.Error() != `namespaces "nowhere" not found` {
		t.Errorf("create in a missing namespace: %v", err)
	}
}

// wantStatus fails unless err is the API error want.
func wantStatus(t *testing.T, err error, want metav1.Status) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("error %v is not a Status", err)
	}
	if got := status.Status(); !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("Status\n got %+v\nwant %+v", got, want)
	}
}

// The check answers from the cache once it is current: here the cache says Terminating while
// storage still says Active, and the create is refused without reading storage.
func TestNamespaceCheckAnswersFromCache(t *testing.T) {
	store := openTestStore(t, sqltest.SQLiteDSN(t))
	reg := newTestRegistry(t, unlistedNamespaces{store})
	namespaces, configMaps := testTypes()
	mustCreate(t, reg, namespaces, "", "demo")
	revision := listNamespacesInto(t, store, reg.namespaces)
	reg.namespaces.Changed(&sqlstore.Event{Op: sqlstore.OpUpdate, Revision: revision + 1, Object: storedNamespace("demo", "Terminating", 0)})
	if err := createNamed(t, reg, configMaps, "demo", "new"); !apierrors.IsForbidden(err) {
		t.Fatalf("create in a namespace the cache says is terminating: %v", err)
	}
}

// openTestStore opens a real store on dsn, closed when the test ends.
func openTestStore(t *testing.T, dsn string) *sqlstore.Store {
	t.Helper()
	store, err := sqlstore.Open(context.Background(), sqltest.Database(t, dsn, sqlstore.SQLite, sqlstore.Postgres), sqlstore.Options{})
	if err != nil {
		t.Fatalf("opening the store: %v", err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// compactingStore compacts away the history after the list the first watch of namespaces
// starts from, after deleting one namespace and creating another, so that the watch fails as
// after a long disconnection and only a relist shows the change.
type compactingStore struct {
	*sqlstore.Store
	t       *testing.T
	watched atomic.Bool
}

func (s *compactingStore) Watch(ctx context.Context, opts sqlstore.WatchOptions) (*sqlstore.Watcher, error) {
	if opts.Resource == "namespaces" && !s.watched.Swap(true) {
		if err := s.changeThenCompact(ctx); err != nil {
			s.t.Error(err)
		}
	}
	return s.Store.Watch(ctx, opts)
}

func (s *compactingStore) changeThenCompact(ctx context.Context) error {
	old, err := s.Get(ctx, storedNamespace("old", "", 0).Key)
	if err != nil {
		return err
	}
	if _, err := s.Write(ctx, sqlstore.Write{Op: sqlstore.OpDelete, Key: old.Key, ExpectedRevision: old.Revision, Render: func(int64) ([]byte, error) { return old.Value, nil }}); err != nil {
		return err
	}
	if err := putNamespace(ctx, s.Store, "new"); err != nil {
		return err
	}
	current, err := s.CurrentRevision(ctx)
	if err != nil {
		return err
	}
	return s.Compact(ctx, current)
}

func putNamespace(ctx context.Context, store *sqlstore.Store, name string) error {
	ns := storedNamespace(name, "Active", 0)
	_, err := store.Write(ctx, sqlstore.Write{Op: sqlstore.OpCreate, Key: ns.Key, Render: func(int64) ([]byte, error) { return ns.Value, nil }})
	return err
}

// After its watch fails on compacted history, the cache relists: a namespace deleted in the
// gap is forgotten and one created in it is known.
func TestNamespaceCacheRelistsAfterCompaction(t *testing.T) {
	store := &compactingStore{Store: openTestStore(t, sqltest.SQLiteDSN(t)), t: t}
	if err := putNamespace(t.Context(), store.Store, "old"); err != nil {
		t.Fatal(err)
	}
	c := newNamespaceCache()
	go follow.Resource(t.Context(), store, slog.New(slog.DiscardHandler), "namespaces", c)
	eventually(t, "the cache relisted", func() bool {
		_, found := c.lookup("new")
		return found
	})
	wantLookup(t, c, "old", false, false)
	wantLookup(t, c, "new", false, true)
}

// eventually waits for cond, failing the test after a deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// feedList gives the cache a list of objects read at revision, as its follower would.
func feedList(c *namespaceCache, revision int64, objects ...sqlstore.Object) {
	c.Relisting()
	for _, o := range objects {
		c.Listed(o)
	}
	c.ListDone(revision)
}
