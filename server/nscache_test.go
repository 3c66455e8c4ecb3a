package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

	c.listed([]sqlstore.Object{storedNamespace("a", "Active", 3), storedNamespace("b", "Terminating", 5)}, 10)
	wantLookup(t, c, "a", false, true)
	wantLookup(t, c, "b", true, true)
	wantLookup(t, c, "c", false, false) // a miss: storage is read

	c.changed(&sqlstore.Event{Op: sqlstore.OpCreate, Revision: 11, Object: storedNamespace("c", "Active", 11)})
	wantLookup(t, c, "c", false, true)

	// This process marked a terminating at 13; the cache has not seen it yet.
	_ = c.wrote(t.Context(), 13)
	_ = c.wrote(t.Context(), 12) // an older write finishing later changes nothing
	wantLookup(t, c, "a", false, false)
	c.changed(&sqlstore.Event{Op: sqlstore.OpUpdate, Revision: 12, Object: storedNamespace("c", "Active", 12)})
	wantLookup(t, c, "a", false, false)
	c.changed(&sqlstore.Event{Op: sqlstore.OpUpdate, Revision: 13, Object: storedNamespace("a", "Terminating", 13)})
	wantLookup(t, c, "a", true, true)

	c.changed(&sqlstore.Event{Op: sqlstore.OpDelete, Revision: 14, Object: storedNamespace("b", "Terminating", 14)})
	wantLookup(t, c, "b", false, false)

	c.watchEnded()
	wantLookup(t, c, "a", false, false)
	c.listed([]sqlstore.Object{storedNamespace("a", "Active", 20)}, 20)
	wantLookup(t, c, "a", false, true)
	wantLookup(t, c, "c", false, false) // gone while the watch was down
}

// An object that does not decode is not cached: the check reads storage, which reports it.
func TestNamespaceCacheLeavesOutUndecodable(t *testing.T) {
	c := newNamespaceCache()
	bad := sqlstore.Object{Key: sqlstore.Key{Resource: "namespaces", Name: "bad"}, Value: []byte(`{"status":7}`)}
	c.listed([]sqlstore.Object{bad, storedNamespace("a", "Active", 1)}, 2)
	wantLookup(t, c, "bad", false, false)
	c.changed(&sqlstore.Event{Op: sqlstore.OpUpdate, Revision: 3, Object: sqlstore.Object{Key: sqlstore.Key{Resource: "namespaces", Name: "a"}, Value: bad.Value}})
	wantLookup(t, c, "a", false, false)
}

// unlistedNamespaces is a store on which no follower ever gets its list of namespaces, so that
// a test drives the server's namespace cache by hand (the namespace controller does not run).
type unlistedNamespaces struct{ Storage }

func (s unlistedNamespaces) List(ctx context.Context, opts sqlstore.ListOptions, each func(sqlstore.Object) error) (sqlstore.ListResult, error) {
	if opts.Resource == "namespaces" {
		<-ctx.Done()
		return sqlstore.ListResult{}, ctx.Err()
	}
	return s.Storage.List(ctx, opts, each)
}

// serveUnlisted serves a server on store whose namespace cache the test drives by hand (see
// unlistedNamespaces).
func serveUnlisted(t *testing.T, store *sqlstore.Store) *testAPI {
	t.Helper()
	srv, err := New(t.Context(), unlistedNamespaces{store}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return serveForTest(t, store, srv)
}

func serveForTest(t *testing.T, store *sqlstore.Store, srv *Server) *testAPI {
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &testAPI{t: t, store: store, server: srv, http: hs}
}

// listNamespacesInto gives the cache the stored namespaces, as its follower would, and returns
// the list's revision.
func listNamespacesInto(t *testing.T, store Storage, c *namespaceCache) int64 {
	t.Helper()
	var objects []sqlstore.Object
	list, err := store.List(t.Context(), sqlstore.ListOptions{Resource: "namespaces"}, func(o sqlstore.Object) error {
		objects = append(objects, o)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.listed(objects, list.Revision)
	return list.Revision
}

// A create right after this server deleted the namespace is refused, though the cache has not
// seen the deletion; a namespace another replica created is found though the cache lacks it.
func TestNamespaceCheckWithLaggingCache(t *testing.T) {
	store := openTestStore(t, sqltest.SQLiteDSN(t))
	api := serveUnlisted(t, store)
	srv := api.server
	c := newClients(t, api)
	createNamespace(t, c, "demo")
	listNamespacesInto(t, store, srv.namespaces)
	wantLookup(t, srv.namespaces, "demo", false, true)
	createConfigMap(t, c, "demo", metav1.ObjectMeta{Name: "before"})

	if err := c.core.CoreV1().Namespaces().Delete(t.Context(), "demo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantLookup(t, srv.namespaces, "demo", false, false) // behind the deletion
	api.do("POST", "/api/v1/namespaces/demo/configmaps", `{"metadata":{"name":"new"}}`).expectStatus(t, metav1.Status{
		Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
		Message: `configmaps "new" is forbidden: unable to create new content in namespace demo because it is being terminated`,
		Details: &metav1.StatusDetails{Name: "new", Kind: "configmaps"},
	})

	// Caught up, the cache misses what another replica creates: storage is read.
	listNamespacesInto(t, store, srv.namespaces)
	wantLookup(t, srv.namespaces, "demo", true, true)
	other, err := New(t.Context(), store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	createNamespace(t, newClients(t, serveForTest(t, store, other)), "elsewhere")
	createConfigMap(t, c, "elsewhere", metav1.ObjectMeta{Name: "found"})
	_, err = c.core.CoreV1().ConfigMaps("nowhere").Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	if !apierrors.IsNotFound(err) || err.Error() != `namespaces "nowhere" not found` {
		t.Errorf("create in a missing namespace: %v", err)
	}
}

// The check answers from the cache once it is current: here the cache says Terminating while
// storage still says Active, and the create is refused without reading storage.
func TestNamespaceCheckAnswersFromCache(t *testing.T) {
	store := openTestStore(t, sqltest.SQLiteDSN(t))
	api := serveUnlisted(t, store)
	createNamespace(t, newClients(t, api), "demo")
	revision := listNamespacesInto(t, store, api.server.namespaces)
	api.server.namespaces.changed(&sqlstore.Event{Op: sqlstore.OpUpdate, Revision: revision + 1, Object: storedNamespace("demo", "Terminating", 0)})
	api.do("POST", "/api/v1/namespaces/demo/configmaps", `{"metadata":{"name":"new"}}`).expect(t, http.StatusForbidden)
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
	s := &Server{store: store, log: slog.New(slog.DiscardHandler)}
	go followResource(t.Context(), s, "namespaces", c)
	eventually(t, "the cache relisted", func() bool {
		_, found := c.lookup("new")
		return found
	})
	wantLookup(t, c, "old", false, false)
	wantLookup(t, c, "new", false, true)
}
