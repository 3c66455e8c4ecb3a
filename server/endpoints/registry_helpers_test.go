package endpoints_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/sqlkube/sqlkube/server/apiserver"
	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/catalog"
	"github.com/sqlkube/sqlkube/server/endpoints"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

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

// startRegistry runs a catalog on store until the test ends.
func startRegistry(t *testing.T, store apiserver.Storage) *catalog.Catalog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g, err := catalog.New(ctx, store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("catalog.New: %v", err)
	}
	return g
}

// serveDiscoveryForTest serves only the discovery routes of a server on g.
func serveDiscoveryForTest(t *testing.T, g *catalog.Catalog) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(endpoints.DiscoveryRoutes(g))
	t.Cleanup(srv.Close)
	return srv
}

func mustLookup(t *testing.T, g *catalog.Catalog, group, version, name string) *resource.Resource {
	t.Helper()
	r, ok := g.Lookup(group, version, name)
	if !ok {
		t.Fatalf("%s/%s %s is not served", group, version, name)
	}
	return r
}

// fromYAML reads a test object.
func fromYAML(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("test object: %v", err)
	}
	return u
}

// crdYAML is a namespaced CRD of example.com with the given plural, kind and versions
// ("v1" is the storage version when present, else the first).
func crdYAML(plural, kind string, versions ...string) string {
	doc := fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[1]s.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: %[1]s
    kind: %[2]s
  versions:
`, plural, kind)
	storage := versions[0]
	for _, v := range versions {
		if v == "v1" {
			storage = v
		}
	}
	for _, v := range versions {
		doc += fmt.Sprintf(`  - name: %s
    served: true
    storage: %t
    subresources:
      status: {}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`, v, v == storage)
	}
	return doc
}

// writeCRD creates a CRD as the create handler does: the type's hooks, then storage, then
// AfterWrite. It fails the test on validation errors.
func writeCRD(t *testing.T, g *catalog.Catalog, store apiserver.Storage, doc string) sqlstore.Object {
	t.Helper()
	crds := mustLookup(t, g, builtin.APIExtensionsGroup, "v1", "customresourcedefinitions")
	u := fromYAML(t, doc)
	u.SetUID(types.UID("uid-" + u.GetName()))
	u.SetCreationTimestamp(metav1.Now())
	crds.Strategy.PrepareForCreate(t.Context(), u)
	if errs := crds.Strategy.Validate(t.Context(), u); len(errs) > 0 {
		t.Fatalf("CRD %s is invalid: %v", u.GetName(), errs.ToAggregate())
	}
	ctx := context.Background()
	o, err := store.Write(ctx, sqlstore.Write{
		Op: sqlstore.OpCreate, Key: sqlstore.Key{Resource: builtin.CRDStorageName, Name: u.GetName()}, Render: renderAtRevision(u),
	})
	if err != nil {
		t.Fatalf("storing CRD %s: %v", u.GetName(), err)
	}
	if err := crds.AfterWrite(ctx, o.Revision); err != nil {
		t.Fatalf("AfterWrite: %v", err)
	}
	return o
}

// readObject reads a stored object.
func readObject(t *testing.T, store apiserver.Storage, key sqlstore.Key) (*unstructured.Unstructured, sqlstore.Object) {
	t.Helper()
	o, err := store.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("reading %v: %v", key, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(o.Value); err != nil {
		t.Fatalf("decoding %v: %v", key, err)
	}
	return u, o
}

// renderAtRevision renders obj as stored at the revision its write is given.
func renderAtRevision(obj *unstructured.Unstructured) func(int64) ([]byte, error) {
	return func(revision int64) ([]byte, error) {
		obj.SetResourceVersion(strconv.FormatInt(revision, 10))
		return json.Marshal(obj.Object)
	}
}

// deleteStoredCRD deletes a CRD from storage, as its cleanup does once its objects are gone
// (controllers/crdcleanup), and waits until the catalog has seen it.
func deleteStoredCRD(t *testing.T, g *catalog.Catalog, store apiserver.Storage, name string) {
	t.Helper()
	key := sqlstore.Key{Resource: builtin.CRDStorageName, Name: name}
	u, stored := readObject(t, store, key)
	ctx := context.Background()
	o, err := store.Write(ctx, sqlstore.Write{Op: sqlstore.OpDelete, Key: key, ExpectedRevision: stored.Revision, Render: renderAtRevision(u)})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.WaitForRevision(ctx, o.Revision); err != nil {
		t.Fatal(err)
	}
}
