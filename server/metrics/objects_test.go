package metrics

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/server/catalog"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

var _ StoredTypes = (*catalog.Catalog)(nil)

// storedTypes serves the resources it holds, by storage name.
type storedTypes map[string]*resource.Resource

func (s storedTypes) StorageResources() map[string]*resource.Resource { return s }

var countedTypes = storedTypes{
	"configmaps":          {Name: "configmaps", StorageName: "configmaps"},
	"secrets":             {Name: "secrets", StorageName: "secrets"},
	"widgets.example.com": {Group: "example.com", Name: "widgets", StorageName: "widgets.example.com"},
}

// openStore is a store on dsn holding that many ConfigMaps, in two namespaces, and one widget.
func openStore(t *testing.T, dsn string, configmaps int) *sqlstore.Store {
	t.Helper()
	store, err := sqlstore.Open(t.Context(), sqltest.Database(t, dsn, sqlstore.SQLite, sqlstore.Postgres), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	create := func(resource, namespace, name string) {
		render := func(int64) ([]byte, error) { return []byte(`{}`), nil }
		key := sqlstore.Key{Resource: resource, Namespace: namespace, Name: name}
		if _, err := store.Write(t.Context(), sqlstore.Write{Op: sqlstore.OpCreate, Key: key, Render: render}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range configmaps {
		create("configmaps", []string{"default", "kube-system"}[i%2], fmt.Sprintf("c%d", i))
	}
	create("widgets.example.com", "", "w")
	return store
}

// TestCount: a stored type's count is its objects in every namespace, on both backends.
func TestCount(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		counts := &objectCounts{store: openStore(t, dsn, 5), types: countedTypes}
		for storage, want := range map[string]int64{"configmaps": 5, "widgets.example.com": 1, "secrets": 0} {
			if n, err := counts.count(t.Context(), storage); err != nil || n != want {
				t.Errorf("%s: %d, %v; want %d", storage, n, err, want)
			}
		}
	})
}

// failingList is a store whose lists fail.
type failingList struct{}

func (failingList) List(context.Context, sqlstore.ListOptions, func(sqlstore.Object) error) (sqlstore.ListResult, error) {
	return sqlstore.ListResult{}, errors.New("the database is away")
}

// TestStartCountsObjects: Start sets apiserver_storage_objects for every stored type at once,
// and the store's sqlkube_* gauges are reported.
func TestStartCountsObjects(t *testing.T) {
	store := openStore(t, sqltest.SQLiteDSN(t), 3)
	Start(t.Context(), store, countedTypes)
	want := map[string]float64{"configmaps": 3, "widgets.example.com": 1, "secrets": 0}
	deadline := time.Now().Add(10 * time.Second)
	for !storedObjectsAre(t, want) {
		if time.Now().After(deadline) {
			t.Fatalf("apiserver_storage_objects never reached %v", want)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
	if rev, ok := sample(t, "sqlkube_current_revision", nil); !ok || rev < 4 {
		t.Errorf("sqlkube_current_revision %v (registered %v), want at least 4", rev, ok)
	}
}

func storedObjectsAre(t *testing.T, want map[string]float64) bool {
	for gr, n := range want {
		if got, ok := sample(t, "apiserver_storage_objects", map[string]string{"resource": gr}); !ok || got != n {
			return false
		}
	}
	return true
}

// TestCountFailure: a type whose count fails is reported as kube-apiserver reports it, as -1,
// and the others are still counted.
func TestCountFailure(t *testing.T) {
	Register()
	types := storedTypes{"failing.example.com": {Group: "example.com", Name: "failing", StorageName: "failing.example.com"}}
	(&objectCounts{store: failingList{}, types: types}).countAll(t.Context())
	if got, ok := sample(t, "apiserver_storage_objects", map[string]string{"resource": "failing.example.com"}); !ok || got != -1 {
		t.Errorf("apiserver_storage_objects of a failing count: %v (registered %v), want -1", got, ok)
	}
}

// TestRunStopsWithContext: the counting loop returns once its context ends.
func TestRunStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		(&objectCounts{store: failingList{}, types: storedTypes{}}).run(ctx, time.Hour)
		close(done)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the counting loop outlived its context")
	}
}
