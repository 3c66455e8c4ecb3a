package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// The CRDs stored before the catalog starts are served from the start, beside the built-ins;
// the storage version's resource stands for the type.
func TestCatalogServesTheStoredCRDs(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		store := openStore(t, dsn)
		first := newCatalog(t, store)
		storeCRD(t, first, store, widgetsCRD("Widget", "v1", "v2"))

		g := newCatalog(t, store)
		for _, version := range []string{"v1", "v2"} {
			if r, ok := g.Lookup("example.com", version, "widgets"); !ok || r.Kind != "Widget" || r.StorageName != "widgets.example.com" {
				t.Errorf("example.com/%s widgets: %+v, served %t", version, r, ok)
			}
		}
		if _, ok := g.Lookup("", "v1", "configmaps"); !ok {
			t.Error("the built-in configmaps are not served")
		}
		if r := g.StorageResources()["widgets.example.com"]; r == nil || r.Version != "v1" {
			t.Errorf("storage resource of widgets: %+v, want v1's", r)
		}
		if r, ok := g.ResourceForKind("example.com/v2", "Widget"); !ok || r.Version != "v2" {
			t.Errorf("ResourceForKind example.com/v2 Widget: %+v, %t", r, ok)
		}
	})
}

// A CRD written after the start is served once the catalog has seen its revision (whoever
// wrote it), and no longer once deleted; each change closes Changed and moves the generation.
func TestCatalogFollowsCRDWrites(t *testing.T) {
	store := openStore(t, sqltest.SQLiteDSN(t))
	g := newCatalog(t, store)
	changed := g.Changed()
	_, generation := g.Resources()

	created := storeCRD(t, g, store, widgetsCRD("Widget", "v1"))
	if _, ok := g.Lookup("example.com", "v1", "widgets"); !ok {
		t.Fatal("a created CRD is not served once the catalog has seen it")
	}
	select {
	case <-changed:
	default:
		t.Error("Changed was not closed by the change")
	}
	if _, now := g.Resources(); now == generation {
		t.Error("the generation did not move")
	}

	deleted, err := store.Write(t.Context(), sqlstore.Write{Op: sqlstore.OpDelete, Key: created.Key, ExpectedRevision: created.Revision,
		Render: func(int64) ([]byte, error) { return created.Value, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.WaitForRevision(t.Context(), deleted.Revision); err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Lookup("example.com", "v1", "widgets"); ok {
		t.Error("a deleted CRD is still served")
	}
}

// A CRD whose kind another one holds waits for it; once that one is deleted, the catalog gives
// it the names, as the naming controller does.
func TestCatalogGivesFreedNamesToAWaitingCRD(t *testing.T) {
	store := openStore(t, sqltest.SQLiteDSN(t))
	g := newCatalog(t, store)
	first := storeCRD(t, g, store, widgetsCRD("Widget", "v1"))
	gizmos := widgetsCRD("Widget", "v1")
	gizmos.Name, gizmos.Spec.Names.Plural = "gizmos.example.com", "gizmos"
	storeCRD(t, g, store, gizmos)
	if _, ok := g.Lookup("example.com", "v1", "gizmos"); ok {
		t.Fatal("a CRD whose kind is taken is served")
	}

	if _, err := store.Write(t.Context(), sqlstore.Write{Op: sqlstore.OpDelete, Key: first.Key, ExpectedRevision: first.Revision,
		Render: func(int64) ([]byte, error) { return first.Value, nil }}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		changed := g.Changed() // before looking, so that no change is missed
		if r, ok := g.Lookup("example.com", "v1", "gizmos"); ok && r.Kind == "Widget" {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("the waiting CRD did not get the freed names")
		}
	}
}

// WaitForRevision gives up with ctx.
func TestCatalogWaitForRevisionEndsWithTheContext(t *testing.T) {
	g := newCatalog(t, openStore(t, sqltest.SQLiteDSN(t)))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := g.WaitForRevision(ctx, 1<<40); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting for a revision never reached: %v", err)
	}
}

func openStore(t *testing.T, dsn string) *sqlstore.Store {
	t.Helper()
	store, err := sqlstore.Open(t.Context(), sqlstore.Options{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

func newCatalog(t *testing.T, store Storage) *Catalog {
	t.Helper()
	g, err := New(t.Context(), store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// widgetsCRD is widgets.example.com, of kind, serving versions (the first stored).
func widgetsCRD(kind string, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: kind},
		},
	}
	preserve := true
	for i, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: i == 0,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}}})
	}
	return crd
}

// storeCRD writes crd to storage as a create through the registry would (prepared: named and
// established), and returns once g serves it.
func storeCRD(t *testing.T, g *Catalog, store Storage, crd *apiextensionsv1.CustomResourceDefinition) sqlstore.Object {
	t.Helper()
	crds, ok := g.Lookup(builtin.APIExtensionsGroup, "v1", "customresourcedefinitions")
	if !ok {
		t.Fatal("customresourcedefinitions are not served")
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetUID(types.UID("uid-" + crd.Name))
	u.SetCreationTimestamp(metav1.Now())
	crds.Strategy.PrepareForCreate(t.Context(), u)
	o, err := store.Write(t.Context(), sqlstore.Write{Op: sqlstore.OpCreate, Key: sqlstore.Key{Resource: builtin.CRDStorageName, Name: crd.Name},
		Render: func(revision int64) ([]byte, error) {
			u.SetResourceVersion(strconv.FormatInt(revision, 10))
			return json.Marshal(u.Object)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := crds.AfterWrite(t.Context(), o.Revision); err != nil {
		t.Fatal(err)
	}
	return o
}
