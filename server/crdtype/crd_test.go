package crdtype_test

import (
	"log/slog"
	"slices"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/sqlkube/sqlkube/server/crdtype"
	"github.com/sqlkube/sqlkube/server/resource"
)

// widgetsDoc is a CRD of two served versions (v1 stored, v2 deprecated with /scale) and one not
// served.
const widgetsDoc = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"widgets.example.com"},
"spec":{"group":"example.com","scope":"Namespaced",
 "names":{"plural":"widgets","kind":"Widget","shortNames":["wd"]},
 "versions":[
  {"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
   "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}},
  {"name":"v2","served":true,"storage":false,"deprecated":true,
   "subresources":{"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas"}},
   "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}},
  {"name":"v0","served":false,"storage":false,
   "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`

func content(t *testing.T, doc string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := utiljson.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func decodeWidgets(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd, err := crdtype.Decode(content(t, widgetsDoc))
	if err != nil {
		t.Fatal(err)
	}
	return crd
}

// nothingTaken says no name is in use.
func nothingTaken(string, string) (resources, kinds sets.Set[string]) {
	return sets.New[string](), sets.New[string]()
}

// Decoding applies the v1 type's defaults, as kube-apiserver's decoder does; Encode writes the
// CRD back.
func TestDecodeDefaultsAndEncode(t *testing.T) {
	crd := decodeWidgets(t)
	if crd.Spec.Names.Singular != "widget" || crd.Spec.Names.ListKind != "WidgetList" ||
		crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter {
		t.Fatalf("decoded names %+v, conversion %+v", crd.Spec.Names, crd.Spec.Conversion)
	}
	obj := &unstructured.Unstructured{}
	crdtype.Encode(crd, obj)
	if singular, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "singular"); singular != "widget" || obj.GetName() != "widgets.example.com" {
		t.Fatalf("encoded %v", obj.Object)
	}
}

// Free names are accepted and the type established; a name another type holds is refused and,
// before the type was ever established, keeps it from being served.
func TestAcceptNames(t *testing.T) {
	crd := decodeWidgets(t)
	crdtype.AcceptNames(crd, nothingTaken)
	if got := crd.Status.AcceptedNames; got.Plural != "widgets" || got.Kind != "Widget" || !slices.Equal(got.ShortNames, []string{"wd"}) {
		t.Fatalf("accepted names %+v", got)
	}
	if !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.NamesAccepted) || !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		t.Fatalf("conditions %+v", crd.Status.Conditions)
	}

	conflicting := decodeWidgets(t)
	kindTaken := func(group, except string) (resources, kinds sets.Set[string]) {
		if group != "example.com" || except != "widgets.example.com" {
			t.Errorf("asked for names of %s except %s", group, except)
		}
		return sets.New[string](), sets.New("Widget")
	}
	crdtype.AcceptNames(conflicting, kindTaken)
	names := apihelpers.FindCRDCondition(conflicting, apiextensionsv1.NamesAccepted)
	if names.Status != apiextensionsv1.ConditionFalse || names.Reason != "KindConflict" || names.Message != `"Widget" is already in use` ||
		conflicting.Status.AcceptedNames.Kind != "" || conflicting.Status.AcceptedNames.Plural != "widgets" {
		t.Fatalf("with its kind taken: %+v, accepted %+v", names, conflicting.Status.AcceptedNames)
	}
	if apihelpers.IsCRDConditionTrue(conflicting, apiextensionsv1.Established) {
		t.Fatal("established with a conflict")
	}

	// Once accepted, a name stays the type's even if another type claims it since.
	crdtype.AcceptNames(crd, kindTaken)
	if crd.Status.AcceptedNames.Kind != "Widget" || !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		t.Fatalf("an accepted kind was taken away: %+v", crd.Status)
	}
}

// An established CRD serves its served versions, named as accepted, with their subresources and
// deprecation; one not established serves nothing.
func TestServedResources(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	crd := decodeWidgets(t)
	if served := crdtype.ServedResources(crd, nil, log); served != nil {
		t.Fatalf("served before being established: %v", served)
	}
	crdtype.AcceptNames(crd, nothingTaken)
	served := crdtype.ServedResources(crd, nil, log)
	if len(served) != 2 {
		t.Fatalf("served %d versions, want 2", len(served))
	}
	v1, v2 := served[0], served[1]
	for _, r := range served {
		if r.Group != "example.com" || r.Name != "widgets" || r.Kind != "Widget" || r.ListKind != "WidgetList" || !r.Namespaced ||
			r.StorageName != "widgets.example.com" || r.StorageVersion != "v1" || r.CRDName != crd.Name || r.Schema == nil || r.Terminating {
			t.Errorf("served %s: %+v", r.Version, r)
		}
	}
	if v1.Version != "v1" || !v1.Status || v1.Scale != nil || v1.DeprecationWarning != "" {
		t.Errorf("v1: status %v scale %v warning %q", v1.Status, v1.Scale, v1.DeprecationWarning)
	}
	if v2.Version != "v2" || v2.Status || v2.Scale == nil || *v2.Scale != (resource.ScaleSubresource{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"}) ||
		v2.DeprecationWarning != "example.com/v2 Widget is deprecated" {
		t.Errorf("v2: status %v scale %+v warning %q", v2.Status, v2.Scale, v2.DeprecationWarning)
	}
	if !slices.Contains(v1.Verbs, "create") {
		t.Errorf("verbs %v", v1.Verbs)
	}

	// A CRD being deleted is still served, without the verbs that write new objects.
	apihelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue})
	for _, r := range crdtype.ServedResources(crd, nil, log) {
		if !r.Terminating || slices.Contains(r.Verbs, "create") || slices.Contains(r.Verbs, "update") || !slices.Contains(r.Verbs, "delete") {
			t.Errorf("terminating %s: %v %v", r.Version, r.Terminating, r.Verbs)
		}
	}
}

// A CRD's objects are cleaned up while it is marked for deletion and holds the cleanup finalizer.
func TestIsBeingCleanedUp(t *testing.T) {
	crd := decodeWidgets(t)
	if crdtype.IsBeingCleanedUp(crd) {
		t.Fatal("a live CRD is being cleaned up")
	}
	now := metav1.Now()
	crd.DeletionTimestamp = &now
	if crdtype.IsBeingCleanedUp(crd) {
		t.Fatal("cleaned up without the finalizer")
	}
	crd.Finalizers = []string{crdtype.CleanupFinalizer}
	if !crdtype.IsBeingCleanedUp(crd) {
		t.Fatal("not cleaned up with the finalizer")
	}
}
