package catalog

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/crdtype"
	"github.com/sqlkube/sqlkube/server/resource"
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

	deleted := deleteStoredCRD(t, store, created)
	if err := g.WaitForRevision(t.Context(), deleted.Revision); err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Lookup("example.com", "v1", "widgets"); ok {
		t.Error("a deleted CRD is still served")
	}
}

// A CRD whose kind another one holds is not served: its names condition says which name is
// taken, it is not established, and it is given only the names still free.
func TestCatalogRefusesNamesAnotherCRDHolds(t *testing.T) {
	store := openStore(t, sqltest.SQLiteDSN(t))
	g := newCatalog(t, store)
	storeCRD(t, g, store, widgetsCRD("Widget", "v1"))
	storeCRD(t, g, store, gizmosCRD())

	crd := readCRD(t, store, "gizmos.example.com")
	wantCondition(t, crd, apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionFalse, "ListKindConflict", `"WidgetList" is already in use`)
	wantCondition(t, crd, apiextensionsv1.Established, apiextensionsv1.ConditionFalse, "NotAccepted", "not all names are accepted")
	if _, served := g.Lookup("example.com", "v1", "gizmos"); served {
		t.Error("a CRD whose names conflict is served")
	}
	if crd.Status.AcceptedNames.Plural != "gizmos" || crd.Status.AcceptedNames.Kind != "" {
		t.Errorf("acceptedNames = %+v: want the free names only", crd.Status.AcceptedNames)
	}
}

// A CRD whose kind another one holds waits for it; once that one is deleted, the catalog gives
// it the names, as the naming controller does, and records them accepted and established.
func TestCatalogGivesFreedNamesToAWaitingCRD(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		store := openStore(t, dsn)
		g := newCatalog(t, store)
		first := storeCRD(t, g, store, widgetsCRD("Widget", "v1"))
		storeCRD(t, g, store, gizmosCRD())
		if _, ok := g.Lookup("example.com", "v1", "gizmos"); ok {
			t.Fatal("a CRD whose kind is taken is served")
		}

		deleteStoredCRD(t, store, first)
		deadline := time.After(10 * time.Second)
		for served := false; !served; {
			changed := g.Changed() // before looking, so that no change is missed
			if r, ok := g.Lookup("example.com", "v1", "gizmos"); ok && r.Kind == "Widget" {
				served = true
				continue
			}
			select {
			case <-changed:
			case <-deadline:
				t.Fatal("the waiting CRD did not get the freed names")
			}
		}
		crd := readCRD(t, store, "gizmos.example.com")
		wantCondition(t, crd, apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found")
		wantCondition(t, crd, apiextensionsv1.Established, apiextensionsv1.ConditionTrue, "InitialNamesAccepted", "the initial names have been accepted")
	})
}

// A CRD that takes a built-in type's names is refused them and not established: the names in
// use that the catalog gives the CRD strategy include the built-ins'.
func TestCatalogRefusesABuiltinsNames(t *testing.T) {
	g := newCatalog(t, openStore(t, sqltest.SQLiteDSN(t)))
	crds := definitions(t, g)
	leases := widgetsCRD("Lease", "v1")
	leases.Name, leases.Spec.Group, leases.Spec.Names.Plural = "leases.coordination.k8s.io", "coordination.k8s.io", "leases"
	u := unstructuredCRD(t, leases)
	crds.Strategy.PrepareForCreate(t.Context(), u)
	crd, err := crdtype.Decode(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	wantCondition(t, crd, apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionFalse, "ListKindConflict", `"LeaseList" is already in use`)
	if apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		t.Error("a CRD taking a built-in's names is established")
	}
}

// A create sets the CRD's status (names accepted, established, the stored version) and its
// defaults; once the catalog has seen it, every served version is served, converted to and
// from the storage version.
func TestCatalogServesACreatedCRDsVersions(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		store := openStore(t, dsn)
		g := newCatalog(t, store)
		storeCRD(t, g, store, widgetsCRD("Widget", "v1", "v1beta1"))

		crd := readCRD(t, store, "widgets.example.com")
		wantNames := apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"}
		if !reflect.DeepEqual(crd.Status.AcceptedNames, wantNames) {
			t.Errorf("acceptedNames = %+v, want %+v", crd.Status.AcceptedNames, wantNames)
		}
		if !reflect.DeepEqual(crd.Status.StoredVersions, []string{"v1"}) {
			t.Errorf("storedVersions = %v, want [v1]", crd.Status.StoredVersions)
		}
		wantCondition(t, crd, apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found")
		wantCondition(t, crd, apiextensionsv1.Established, apiextensionsv1.ConditionTrue, "InitialNamesAccepted", "the initial names have been accepted")
		if crd.Generation != 1 || crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter {
			t.Errorf("generation %d, conversion %+v: want 1 and the defaulted strategy None", crd.Generation, crd.Spec.Conversion)
		}

		for _, version := range []string{"v1", "v1beta1"} {
			r := mustLookup(t, g, "example.com", version, "widgets")
			if r.StorageName != "widgets.example.com" || r.StorageVersion != "v1" || !r.Namespaced || !r.Status || r.Kind != "Widget" || r.Schema == nil {
				t.Errorf("%s: %+v", version, r)
			}
		}
		beta := mustLookup(t, g, "example.com", "v1beta1", "widgets")
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1beta1", "kind": "Widget"}}
		beta.ToStorage(obj)
		if obj.GetAPIVersion() != "example.com/v1" {
			t.Errorf("ToStorage: apiVersion %q", obj.GetAPIVersion())
		}
		if served, err := beta.ReadStored(obj); err != nil || served.GetAPIVersion() != "example.com/v1beta1" || !beta.NeedsConversion() {
			t.Errorf("ReadStored: %v, %v", served, err)
		}
	})
}

// A deprecated version is served with the warning kube gives; the others without.
func TestCatalogServesDeprecationWarnings(t *testing.T) {
	store := openStore(t, sqltest.SQLiteDSN(t))
	g := newCatalog(t, store)
	crd := widgetsCRD("Widget", "v1", "v1beta1")
	crd.Spec.Versions[1].Deprecated = true
	storeCRD(t, g, store, crd)
	if w := mustLookup(t, g, "example.com", "v1beta1", "widgets").DeprecationWarning; w != "example.com/v1beta1 Widget is deprecated" {
		t.Errorf("deprecated version's warning %q", w)
	}
	if w := mustLookup(t, g, "example.com", "v1", "widgets").DeprecationWarning; w != "" {
		t.Errorf("current version's warning %q", w)
	}
}

// A CRD written through another catalog on the same database (another replica) is served once
// this one has seen its revision.
func TestCatalogServesCRDsWrittenByAnotherReplica(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		here := newCatalog(t, openStore(t, dsn))
		otherStore := openStore(t, dsn)
		other := newCatalog(t, otherStore)

		o := storeCRD(t, other, otherStore, widgetsCRD("Widget", "v1"))
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := here.WaitForRevision(ctx, o.Revision); err != nil {
			t.Fatal(err)
		}
		mustLookup(t, here, "example.com", "v1", "widgets")
	})
}

// WaitForRevision gives up with ctx.
func TestCatalogWaitForRevisionEndsWithTheContext(t *testing.T) {
	g := newCatalog(t, openStore(t, sqltest.SQLiteDSN(t)))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := g.WaitForRevision(ctx, 1<<40); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting for a revision never reached: %v", err)
	}
	// A CRD write waits for the catalog to see it (AfterWrite), and so gives up with ctx too.
	if err := definitions(t, g).AfterWrite(ctx, 1000); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("AfterWrite for a revision never written: %v, want DeadlineExceeded", err)
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

func newCatalog(t *testing.T, store Storage) *Catalog {
	t.Helper()
	g, err := New(t.Context(), store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// widgetsCRD is widgets.example.com, of kind, serving versions (the first stored) with /status.
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
			Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}}})
	}
	return crd
}

// gizmosCRD is gizmos.example.com, whose kind is the widgets' Widget.
func gizmosCRD() *apiextensionsv1.CustomResourceDefinition {
	gizmos := widgetsCRD("Widget", "v1")
	gizmos.Name, gizmos.Spec.Names.Plural = "gizmos.example.com", "gizmos"
	return gizmos
}

// definitions is the customresourcedefinitions resource g serves, with the rules g binds.
func definitions(t *testing.T, g *Catalog) *resource.Resource {
	t.Helper()
	return mustLookup(t, g, builtin.APIExtensionsGroup, "v1", "customresourcedefinitions")
}

func mustLookup(t *testing.T, g *Catalog, group, version, name string) *resource.Resource {
	t.Helper()
	r, ok := g.Lookup(group, version, name)
	if !ok {
		t.Fatalf("%s/%s %s is not served", group, version, name)
	}
	return r
}

func unstructuredCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: content}
}

// storeCRD writes crd to storage as a create through the registry would (prepared: named and
// established; validated), and returns once g has seen it.
func storeCRD(t *testing.T, g *Catalog, store Storage, crd *apiextensionsv1.CustomResourceDefinition) sqlstore.Object {
	t.Helper()
	crds := definitions(t, g)
	u := unstructuredCRD(t, crd)
	u.SetUID(types.UID("uid-" + crd.Name))
	u.SetCreationTimestamp(metav1.Now())
	crds.Strategy.PrepareForCreate(t.Context(), u)
	if errs := crds.Strategy.Validate(t.Context(), u); len(errs) > 0 {
		t.Fatalf("CRD %s is invalid: %v", crd.Name, errs.ToAggregate())
	}
	o, err := store.Write(t.Context(), sqlstore.Write{Op: sqlstore.OpCreate, Key: sqlstore.Key{Resource: builtin.CRDStorageName, Name: crd.Name},
		Render: renderAtRevision(u)})
	if err != nil {
		t.Fatal(err)
	}
	if err := crds.AfterWrite(t.Context(), o.Revision); err != nil {
		t.Fatal(err)
	}
	return o
}

// deleteStoredCRD deletes the stored CRD o from storage, as its cleanup does once its objects
// are gone, and returns the deletion.
func deleteStoredCRD(t *testing.T, store Storage, o sqlstore.Object) sqlstore.Object {
	t.Helper()
	deleted, err := store.Write(t.Context(), sqlstore.Write{Op: sqlstore.OpDelete, Key: o.Key, ExpectedRevision: o.Revision,
		Render: func(int64) ([]byte, error) { return o.Value, nil }})
	if err != nil {
		t.Fatal(err)
	}
	return deleted
}

// readCRD reads and decodes the stored CRD name.
func readCRD(t *testing.T, store *sqlstore.Store, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	o, err := store.Get(t.Context(), sqlstore.Key{Resource: builtin.CRDStorageName, Name: name})
	if err != nil {
		t.Fatalf("reading CRD %s: %v", name, err)
	}
	crd, err := crdtype.DecodeJSON(o.Value)
	if err != nil {
		t.Fatal(err)
	}
	return crd
}

func wantCondition(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, typ apiextensionsv1.CustomResourceDefinitionConditionType, status apiextensionsv1.ConditionStatus, reason, message string) {
	t.Helper()
	c := apihelpers.FindCRDCondition(crd, typ)
	if c == nil || c.Status != status || c.Reason != reason || c.Message != message || c.LastTransitionTime.IsZero() {
		t.Errorf("condition %s = %+v, want %s %s %q", typ, c, status, reason, message)
	}
}
