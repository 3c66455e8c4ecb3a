// Package controllertest runs controllers in tests as the server runs them: on a real store (a
// SQLite file, or a PostgreSQL database of the test's own), with the catalog following the
// stored CRDs and the registry writing, without HTTP. Only tests import it.
package controllertest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/sqlkube/sqlkube/server/catalog"
	"github.com/sqlkube/sqlkube/server/controllers"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// Env is what a controller under test runs on, and the store under it.
type Env struct {
	controllers.Deps
	Store *sqlstore.Store
	t     testing.TB
}

// Backends runs fn once on SQLite and once on PostgreSQL (skipped when PostgreSQL cannot be
// reached, a failure in CI: see sqltest.Missing).
func Backends(t *testing.T, fn func(t *testing.T, env *Env)) {
	sqltest.Backends(t, func(t *testing.T, dsn string) { fn(t, New(t, dsn)) })
}

// New opens a store on dsn and runs a catalog and a registry on it until the test ends. It
// starts no controller: the test runs those it tests.
func New(t testing.TB, dsn string) *Env {
	t.Helper()
	store, err := sqlstore.Open(t.Context(), sqltest.Database(t, dsn, sqlstore.SQLite, sqlstore.Postgres), sqlstore.Options{})
	if err != nil {
		t.Fatalf("opening the store: %v", err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return OnStore(t, store)
}

// OnStore runs a catalog and a registry on store until the test ends, as another replica on the
// same database would.
func OnStore(t testing.TB, store *sqlstore.Store) *Env {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	types, err := catalog.New(t.Context(), store, nil, log)
	if err != nil {
		t.Fatalf("catalog.New: %v", err)
	}
	reg, err := registry.New(t.Context(), store, lookup(t, types, "", "namespaces"), registry.Options{Logger: log})
	if err != nil {
		t.Fatalf("registry.New: %v", err)
	}
	return &Env{Deps: controllers.Deps{Store: store, Registry: reg, Catalog: types, Log: log}, Store: store, t: t}
}

// For is e reporting to t, for a subtest.
func (e *Env) For(t testing.TB) *Env {
	c := *e
	c.t = t
	return &c
}

// lookup is the type of group (in its version v1) and resource the catalog serves.
func lookup(t testing.TB, types *catalog.Catalog, group, name string) *resource.Resource {
	t.Helper()
	res, ok := types.Lookup(group, "v1", name)
	if !ok {
		t.Fatalf("%s.%s/v1 is not served", name, group)
	}
	return res
}

// Resource is the served type group/v1 name.
func (e *Env) Resource(group, name string) *resource.Resource {
	e.t.Helper()
	return lookup(e.t, e.Catalog, group, name)
}

// Ref names an object of group/v1 name (a collection, with name "").
func (e *Env) Ref(group, resourceName, namespace, name string) registry.Ref {
	e.t.Helper()
	return registry.Ref{Resource: e.Resource(group, resourceName), Namespace: namespace, Name: name}
}

// FieldManager is who Create writes as: a client, as the HTTP layer names one by its user agent.
const FieldManager = "controllertest"

// Create creates obj in ref's collection through the registry, and returns it as stored.
func (e *Env) Create(ref registry.Ref, obj *unstructured.Unstructured) *unstructured.Unstructured {
	e.t.Helper()
	stored, _, err := e.Registry.Create(e.t.Context(), ref, obj, &metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		e.t.Fatalf("creating %s %s/%s: %v", ref.Resource.Name, ref.Namespace, obj.GetName(), err)
	}
	return Decode(e.t, stored)
}

// CreateNamed creates an object of ref's type named name with meta's owners and finalizers.
func (e *Env) CreateNamed(ref registry.Ref, meta metav1.ObjectMeta) *unstructured.Unstructured {
	e.t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetAPIVersion(ref.Resource.APIVersion())
	obj.SetKind(ref.Resource.Kind)
	obj.SetName(meta.Name)
	obj.SetFinalizers(meta.Finalizers)
	obj.SetOwnerReferences(meta.OwnerReferences)
	return e.Create(ref, obj)
}

// Get reads the object ref names; err is the registry's (NotFound when gone).
func (e *Env) Get(ref registry.Ref) (*unstructured.Unstructured, error) {
	stored, err := e.Registry.Get(e.t.Context(), ref, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return Decode(e.t, stored), nil
}

// Delete deletes the object ref names with propagation policy (none if "").
func (e *Env) Delete(ref registry.Ref, policy metav1.DeletionPropagation) *unstructured.Unstructured {
	e.t.Helper()
	opts := &metav1.DeleteOptions{}
	if policy != "" {
		opts.PropagationPolicy = &policy
	}
	stored, _, err := e.Registry.Delete(e.t.Context(), ref, opts)
	if err != nil {
		e.t.Fatalf("deleting %s %s/%s: %v", ref.Resource.Name, ref.Namespace, ref.Name, err)
	}
	return Decode(e.t, stored)
}

// WidgetCRD serves widgets.example.com: namespaced, v1, any content.
const WidgetCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"widgets.example.com"},
"spec":{"group":"example.com","scope":"Namespaced",
 "names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
 "versions":[{"name":"v1","served":true,"storage":true,
  "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`

// ServeWidgets creates the widgets CRD and waits until the catalog serves widgets.
func (e *Env) ServeWidgets() registry.Ref {
	e.t.Helper()
	crd := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal([]byte(WidgetCRD), &crd.Object); err != nil {
		e.t.Fatal(err)
	}
	e.Create(e.Ref("apiextensions.k8s.io", "customresourcedefinitions", "", ""), crd)
	Eventually(e.t, "widgets are served", func() bool {
		_, ok := e.Catalog.Lookup("example.com", "v1", "widgets")
		return ok
	})
	return e.Ref("example.com", "widgets", "", "")
}

// Decode reads a stored object.
func Decode(t testing.TB, stored sqlstore.Object) *unstructured.Unstructured {
	t.Helper()
	obj, err := storedobj.DecodeStored(stored.Value)
	if err != nil {
		t.Fatalf("decoding %s: %v", stored.Value, err)
	}
	return obj
}

// Eventually waits for cond, failing the test after a deadline.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WatchAfter watches the objects of the resource stored as resource, in from's namespace (all
// of them for a cluster-scoped from), after from's revision, until the test ends.
func WatchAfter(t testing.TB, store *sqlstore.Store, resource string, from *unstructured.Unstructured) <-chan *sqlstore.Event {
	t.Helper()
	rev, err := registry.ParseResourceVersion(from.GetResourceVersion())
	if err != nil {
		t.Fatal(err)
	}
	w, err := store.Watch(t.Context(), sqlstore.WatchOptions{Resource: resource, Namespace: from.GetNamespace(), After: rev})
	if err != nil {
		t.Fatal(err)
	}
	return w.Events()
}

// Receive reads n object events, skipping progress notifications, failing after a deadline.
func Receive(t testing.TB, events <-chan *sqlstore.Event, n int) []*sqlstore.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var got []*sqlstore.Event
	for len(got) < n {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("watch ended after %d events", len(got))
			}
			if !ev.Progress {
				got = append(got, ev)
			}
		case <-ctx.Done():
			t.Fatalf("received %d events of %d", len(got), n)
		}
	}
	return got
}
