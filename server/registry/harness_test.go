package registry_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// The tests of this file's package test the registry through its exported API only, on real
// databases, as its callers (the HTTP layer, the controllers) use it.

// testRegistry is a Registry on a real store, serving the built-in types, until the test ends.
type testRegistry struct {
	t     *testing.T
	store *sqlstore.Store
	reg   *registry.Registry
	// types are the built-in types by storage name ("configmaps", "leases.coordination.k8s.io").
	types map[string]*resource.Resource
}

// onBackends runs fn with a registry on a new SQLite file and on a new PostgreSQL database. When
// PostgreSQL cannot be reached, its subtest is skipped, or fails in CI (see sqltest.Missing).
func onBackends(t *testing.T, fn func(t *testing.T, r *testRegistry)) {
	sqltest.Backends(t, func(t *testing.T, dsn string) { fn(t, newTestRegistry(t, dsn)) })
}

// onSQLite is a registry on a new SQLite file, for rules no database can change.
func onSQLite(t *testing.T) *testRegistry {
	return newTestRegistry(t, sqltest.SQLiteDSN(t))
}

func newTestRegistry(t *testing.T, dsn string) *testRegistry {
	t.Helper()
	store := openStore(t, dsn)
	types := map[string]*resource.Resource{}
	for _, r := range builtin.Resources(func(*resource.Resource) {}, nil) {
		if r.ServesStorageVersion() { // one per stored type (events: core's, not events.k8s.io's)
			types[r.StorageName] = r
		}
	}
	reg, err := registry.New(t.Context(), store, types["namespaces"], registry.Options{RevisionWait: 300 * time.Millisecond})
	if err != nil {
		t.Fatalf("registry.New: %v", err)
	}
	return &testRegistry{t: t, store: store, reg: reg, types: types}
}

// openStore opens a store on dsn, closed when the test ends.
func openStore(t *testing.T, dsn string) *sqlstore.Store {
	t.Helper()
	store, err := sqlstore.Open(t.Context(), sqltest.Database(t, dsn, sqlstore.SQLite, sqlstore.Postgres), sqlstore.Options{})
	if err != nil {
		t.Fatalf("opening the store: %v", err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// fieldManager is who the tests write as: a client, as the HTTP layer names every writer (by
// its user agent when it does not say).
const fieldManager = "registrytest"

// ref names an object (or, with name "", a collection) of the built-in type stored as typ.
func (r *testRegistry) ref(typ, namespace, name string) registry.Ref {
	r.t.Helper()
	res, ok := r.types[typ]
	if !ok {
		r.t.Fatalf("no built-in type %s", typ)
	}
	return registry.Ref{Resource: res, Namespace: namespace, Name: name}
}

// create creates the object doc (JSON) in typ's collection in namespace.
func (r *testRegistry) create(typ, namespace, doc string) (*unstructured.Unstructured, error) {
	r.t.Helper()
	ref := r.ref(typ, namespace, "")
	stored, _, err := r.reg.Create(r.t.Context(), ref, typed(r.t, ref, doc), &metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil {
		return nil, err
	}
	return decode(r.t, stored), nil
}

// mustCreate is create, failing the test on an error.
func (r *testRegistry) mustCreate(typ, namespace, doc string) *unstructured.Unstructured {
	r.t.Helper()
	obj, err := r.create(typ, namespace, doc)
	if err != nil {
		r.t.Fatalf("creating %s in %q: %v", doc, namespace, err)
	}
	return obj
}

// get reads an object at the latest revision.
func (r *testRegistry) get(typ, namespace, name string) (*unstructured.Unstructured, error) {
	r.t.Helper()
	stored, err := r.reg.Get(r.t.Context(), r.ref(typ, namespace, name), &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return decode(r.t, stored), nil
}

// mustGet is get, failing the test on an error.
func (r *testRegistry) mustGet(typ, namespace, name string) *unstructured.Unstructured {
	r.t.Helper()
	obj, err := r.get(typ, namespace, name)
	if err != nil {
		r.t.Fatalf("reading %s %s/%s: %v", typ, namespace, name, err)
	}
	return obj
}

// update replaces the object ref names (or its subresource) with doc.
func (r *testRegistry) update(ref registry.Ref, doc string) (obj *unstructured.Unstructured, created bool, err error) {
	r.t.Helper()
	stored, created, err := r.reg.Update(r.t.Context(), ref, typed(r.t, ref, doc), &metav1.UpdateOptions{FieldManager: fieldManager})
	if err != nil {
		return nil, false, err
	}
	return decode(r.t, stored), created, nil
}

// mustUpdate is update, failing the test on an error.
func (r *testRegistry) mustUpdate(ref registry.Ref, doc string) *unstructured.Unstructured {
	r.t.Helper()
	obj, _, err := r.update(ref, doc)
	if err != nil {
		r.t.Fatalf("updating %s/%s with %s: %v", ref.Namespace, ref.Name, doc, err)
	}
	return obj
}

// mustDelete deletes the object ref names with opts, and returns what the delete answered and
// whether the object is gone.
func (r *testRegistry) mustDelete(ref registry.Ref, opts *metav1.DeleteOptions) (*unstructured.Unstructured, bool) {
	r.t.Helper()
	stored, deleted, err := r.reg.Delete(r.t.Context(), ref, opts)
	if err != nil {
		r.t.Fatalf("deleting %s/%s: %v", ref.Namespace, ref.Name, err)
	}
	return decode(r.t, stored), deleted
}

// revision is the store's current revision.
func (r *testRegistry) revision() int64 {
	r.t.Helper()
	rev, err := r.store.CurrentRevision(r.t.Context())
	if err != nil {
		r.t.Fatal(err)
	}
	return rev
}

// typed reads a test object written as JSON as the HTTP layer decodes a body for ref: with
// ref's apiVersion and kind when it gives none.
func typed(t testing.TB, ref registry.Ref, doc string) *unstructured.Unstructured {
	t.Helper()
	obj, err := parseObject(ref, doc)
	if err != nil {
		t.Fatalf("test object %s: %v", doc, err)
	}
	return obj
}

func parseObject(ref registry.Ref, doc string) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(doc), &obj.Object); err != nil {
		return nil, err
	}
	if obj.GetKind() == "" {
		obj.SetAPIVersion(ref.Resource.APIVersion())
		obj.SetKind(ref.Resource.Kind)
	}
	return obj, nil
}

// decode reads an object as the registry stored it.
func decode(t testing.TB, stored sqlstore.Object) *unstructured.Unstructured {
	t.Helper()
	u, err := storedobj.DecodeStored(stored.Value)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// asStatus is errors.As for an API error.
func asStatus(err error, status *apierrors.APIStatus) bool {
	return errors.As(err, status)
}

// wantCode fails unless err is an API error with the HTTP code.
func wantCode(t testing.TB, err error, code int32) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != code {
		t.Fatalf("error %v, want a Status with code %d", err, code)
	}
}

// nestedStrings reads a string list of obj, nil if absent.
func nestedStrings(obj *unstructured.Unstructured, fields ...string) []string {
	list, _, _ := unstructured.NestedStringSlice(obj.Object, fields...)
	return list
}

// wantStatus fails unless err is the API error want.
func wantStatus(t testing.TB, err error, want metav1.Status) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("error %v is not a Status", err)
	}
	if got := status.Status(); !apiequality.Semantic.DeepEqual(got, want) {
		t.Fatalf("Status\n got %+v\nwant %+v", got, want)
	}
}
