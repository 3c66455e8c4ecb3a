package server_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sqlkube/sqlkube/server/apiserver"
	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/catalog"
	"github.com/sqlkube/sqlkube/server/crdtype"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

func TestCRDCreateSetsStatusAndServesVersions(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		store := openTestStore(t, dsn)
		g := startRegistry(t, store)
		writeCRD(t, g, store, crdYAML("widgets", "Widget", "v1beta1", "v1"))

		u, _ := readObject(t, store, sqlstore.Key{Resource: builtin.CRDStorageName, Name: "widgets.example.com"})
		crd, err := crdtype.Decode(u.Object)
		if err != nil {
			t.Fatal(err)
		}
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

func TestCRDDeprecatedVersionWarns(t *testing.T) {
	store := openTestStore(t, sqltest.SQLiteDSN(t))
	g := startRegistry(t, store)
	doc := strings.Replace(crdYAML("widgets", "Widget", "v1beta1", "v1"), "storage: false", "storage: false\n    deprecated: true", 1)
	writeCRD(t, g, store, doc)
	if w := mustLookup(t, g, "example.com", "v1beta1", "widgets").DeprecationWarning; w != "example.com/v1beta1 Widget is deprecated" {
		t.Errorf("deprecated version's warning %q", w)
	}
	if w := mustLookup(t, g, "example.com", "v1", "widgets").DeprecationWarning; w != "" {
		t.Errorf("current version's warning %q", w)
	}
}

func wantCondition(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, typ apiextensionsv1.CustomResourceDefinitionConditionType, status apiextensionsv1.ConditionStatus, reason, message string) {
	t.Helper()
	c := apihelpers.FindCRDCondition(crd, typ)
	if c == nil || c.Status != status || c.Reason != reason || c.Message != message || c.LastTransitionTime.IsZero() {
		t.Errorf("condition %s = %+v, want %s %s %q", typ, c, status, reason, message)
	}
}

func TestCRDValidationErrors(t *testing.T) {
	g := startRegistry(t, openTestStore(t, sqltest.SQLiteDSN(t)))
	crds := mustLookup(t, g, builtin.APIExtensionsGroup, "v1", "customresourcedefinitions")
	for _, tc := range []struct {
		name   string
		mutate func(u *unstructured.Unstructured)
		causes []metav1.StatusCause
	}{{
		name:   "name is not plural.group",
		mutate: func(u *unstructured.Unstructured) { u.SetName("gadgets.example.com") },
		causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "metadata.name",
			Message: `Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group`}},
	}, {
		name: "no storage version",
		mutate: func(u *unstructured.Unstructured) {
			versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
			versions[0].(map[string]any)["storage"] = false
			_ = unstructured.SetNestedSlice(u.Object, versions, "spec", "versions")
		},
		causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.versions",
			Message: `Invalid value: [{"Name":"v1","Served":true,"Storage":false,"Deprecated":false,"DeprecationWarning":null,"Schema":null,"Subresources":null,"AdditionalPrinterColumns":null,"SelectableFields":null}]: must have exactly one version marked as storage version`},
			// Without a storage version, the create records no stored version either.
			{Type: metav1.CauseTypeFieldValueInvalid, Field: "status.storedVersions", Message: "Invalid value: null: must have at least one stored version"}},
	}, {
		name:   "scope missing",
		mutate: func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "spec", "scope") },
		causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueRequired, Field: "spec.scope", Message: "Required value"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			u := fromYAML(t, crdYAML("widgets", "Widget", "v1"))
			tc.mutate(u)
			crds.Strategy.PrepareForCreate(t.Context(), u)
			errs := crds.Strategy.Validate(t.Context(), u)
			status := apierrors.NewInvalid(schema.GroupKind{Group: builtin.APIExtensionsGroup, Kind: "CustomResourceDefinition"}, u.GetName(), errs).Status()
			if status.Code != 422 || status.Reason != metav1.StatusReasonInvalid {
				t.Fatalf("status %d %s, want 422 Invalid", status.Code, status.Reason)
			}
			if got := status.Details.Causes; !reflect.DeepEqual(got, tc.causes) {
				t.Errorf("causes:\n got %+v\nwant %+v", got, tc.causes)
			}
		})
	}
}

func TestCRDUpdateKeepsStatusAndBumpsGeneration(t *testing.T) {
	g := startRegistry(t, openTestStore(t, sqltest.SQLiteDSN(t)))
	crds := mustLookup(t, g, builtin.APIExtensionsGroup, "v1", "customresourcedefinitions")
	old := fromYAML(t, crdYAML("widgets", "Widget", "v1"))
	crds.Strategy.PrepareForCreate(t.Context(), old)
	old.SetResourceVersion("5")

	same := old.DeepCopy()
	unstructured.RemoveNestedField(same.Object, "status")
	crds.Strategy.PrepareForUpdate(t.Context(), same, old)
	if same.GetGeneration() != 1 || !reflect.DeepEqual(same.Object["status"], old.Object["status"]) {
		t.Errorf("unchanged spec: generation %d, status %v", same.GetGeneration(), same.Object["status"])
	}

	changed := fromYAML(t, crdYAML("widgets", "Widget", "v1", "v2"))
	changed.SetResourceVersion("5")
	crds.Strategy.PrepareForUpdate(t.Context(), changed, old)
	if changed.GetGeneration() != 2 {
		t.Errorf("changed spec: generation %d, want 2", changed.GetGeneration())
	}
	if errs := crds.Strategy.ValidateUpdate(t.Context(), changed, old); len(errs) > 0 {
		t.Errorf("valid update refused: %v", errs)
	}
}

func TestCRDNameConflictIsNotServed(t *testing.T) {
	store := openTestStore(t, sqltest.SQLiteDSN(t))
	g := startRegistry(t, store)
	writeCRD(t, g, store, crdYAML("widgets", "Widget", "v1"))
	writeCRD(t, g, store, crdYAML("gizmos", "Widget", "v1"))

	u, _ := readObject(t, store, sqlstore.Key{Resource: builtin.CRDStorageName, Name: "gizmos.example.com"})
	crd, _ := crdtype.Decode(u.Object)
	wantCondition(t, crd, apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionFalse, "ListKindConflict", `"WidgetList" is already in use`)
	wantCondition(t, crd, apiextensionsv1.Established, apiextensionsv1.ConditionFalse, "NotAccepted", "not all names are accepted")
	if _, served := g.Lookup("example.com", "v1", "gizmos"); served {
		t.Error("a CRD whose names conflict is served")
	}
	if crd.Status.AcceptedNames.Plural != "gizmos" || crd.Status.AcceptedNames.Kind != "" {
		t.Errorf("acceptedNames = %+v: want the free names only", crd.Status.AcceptedNames)
	}
}

func TestCRDGetsNamesFreedByAnotherOne(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		store := openTestStore(t, dsn)
		g := startRegistry(t, store)
		writeCRD(t, g, store, crdYAML("widgets", "Widget", "v1"))
		writeCRD(t, g, store, crdYAML("gizmos", "Widget", "v1"))

		deleteStoredCRD(t, g, store, "widgets.example.com")
		eventually(t, "gizmos are served once widgets are gone", func() bool {
			r, served := g.Lookup("example.com", "v1", "gizmos")
			return served && r.Kind == "Widget"
		})
		u, _ := readObject(t, store, sqlstore.Key{Resource: builtin.CRDStorageName, Name: "gizmos.example.com"})
		crd, _ := crdtype.Decode(u.Object)
		wantCondition(t, crd, apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found")
		wantCondition(t, crd, apiextensionsv1.Established, apiextensionsv1.ConditionTrue, "InitialNamesAccepted", "the initial names have been accepted")
	})
}

func TestCRDInProtectedGroupGetsItsApprovalCondition(t *testing.T) {
	g := startRegistry(t, openTestStore(t, sqltest.SQLiteDSN(t)))
	crds := mustLookup(t, g, builtin.APIExtensionsGroup, "v1", "customresourcedefinitions")
	u := fromYAML(t, strings.ReplaceAll(crdYAML("widgets", "Widget", "v1"), "example.com", "x.k8s.io"))
	u.SetAnnotations(map[string]string{apiextensionsv1.KubeAPIApprovedAnnotation: "unapproved, testing"})
	crds.Strategy.PrepareForCreate(t.Context(), u)
	if errs := crds.Strategy.Validate(t.Context(), u); len(errs) > 0 {
		t.Fatal(errs)
	}
	crd, _ := crdtype.Decode(u.Object)
	wantCondition(t, crd, apiextensionsv1.KubernetesAPIApprovalPolicyConformant, apiextensionsv1.ConditionFalse, "UnapprovedAnnotation", `not approved: "unapproved, testing"`)
}

func TestCRDConflictWithBuiltinIsNotServed(t *testing.T) {
	g := startRegistry(t, openTestStore(t, sqltest.SQLiteDSN(t)))
	crds := mustLookup(t, g, builtin.APIExtensionsGroup, "v1", "customresourcedefinitions")
	u := fromYAML(t, crdYAML("leases", "Lease", "v1"))
	u.SetName("leases.coordination.k8s.io")
	_ = unstructured.SetNestedField(u.Object, "coordination.k8s.io", "spec", "group")
	crds.Strategy.PrepareForCreate(t.Context(), u)
	crd, _ := crdtype.Decode(u.Object)
	wantCondition(t, crd, apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionFalse, "ListKindConflict", `"LeaseList" is already in use`)
	if apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		t.Error("a CRD taking a built-in's names is established")
	}
}

func TestCRDWrittenByAnotherReplicaIsServed(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		here := startRegistry(t, openTestStore(t, dsn))
		otherStore := openTestStore(t, dsn)
		other := startRegistry(t, otherStore)

		o := writeCRD(t, other, otherStore, crdYAML("widgets", "Widget", "v1"))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := here.WaitForRevision(ctx, o.Revision); err != nil {
			t.Fatal(err)
		}
		mustLookup(t, here, "example.com", "v1", "widgets")
	})
}

func TestRegistryLoadsStoredCRDs(t *testing.T) {
	dsn := sqltest.SQLiteDSN(t)
	store := openTestStore(t, dsn)
	writeCRD(t, startRegistry(t, store), store, crdYAML("widgets", "Widget", "v1"))

	restarted := startRegistry(t, store)
	mustLookup(t, restarted, "example.com", "v1", "widgets")
}

func TestAfterWriteGivesUpAtItsDeadline(t *testing.T) {
	g := startRegistry(t, openTestStore(t, sqltest.SQLiteDSN(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := mustLookup(t, g, builtin.APIExtensionsGroup, "v1", "customresourcedefinitions").AfterWrite(ctx, 1000)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AfterWrite for a revision never written: %v, want DeadlineExceeded", err)
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
