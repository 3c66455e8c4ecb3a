package crdtype

import (
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/yaml"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/resource"
)

const widgetsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
          status: {type: object, properties: {ready: {type: boolean}}}
`

// definitions is the customresourcedefinitions resource with its rules bound, in a cluster
// where no other name is taken.
func definitions(t *testing.T) *resource.Resource {
	t.Helper()
	noneTaken := func(string, string) (sets.Set[string], sets.Set[string]) {
		return sets.New[string](), sets.New[string]()
	}
	for _, r := range builtin.Resources(func(r *resource.Resource) { BindHooks(r, noneTaken, nil) }, nil) {
		if r.StorageName == builtin.CRDStorageName {
			return r
		}
	}
	t.Fatal("no customresourcedefinitions")
	return nil
}

func fromYAML(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal(data, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// widgets prepares and validates the widgets CRD as a create would, and returns the resource
// it serves.
func widgets(t *testing.T) *resource.Resource {
	t.Helper()
	crds := definitions(t)
	u := fromYAML(t, widgetsCRD)
	crds.Strategy.PrepareForCreate(t.Context(), u)
	if errs := crds.Strategy.Validate(t.Context(), u); len(errs) > 0 {
		t.Fatalf("valid CRD refused: %v", errs)
	}
	crd, err := Decode(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	served := ServedResources(crd, nil, slog.New(slog.DiscardHandler))
	if len(served) != 1 {
		t.Fatalf("served %v", served)
	}
	return served[0]
}

// TestCustomResourceStrategy: a custom resource's strategy is its schema's: generation tracked,
// status left to /status, finalizer names warned about, no create or unconditional update by
// PUT, and the schema's table.
func TestCustomResourceStrategy(t *testing.T) {
	res := widgets(t)
	s := res.Strategy
	if !s.NamespaceScoped() || !s.TracksGeneration() || s.AllowCreateOnUpdate() || s.AllowUnconditionalUpdate() || s.StatusStrategy() == nil {
		t.Errorf("strategy: namespaced %t, generation %t, createOnUpdate %t, unconditional %t, status %v",
			s.NamespaceScoped(), s.TracksGeneration(), s.AllowCreateOnUpdate(), s.AllowUnconditionalUpdate(), s.StatusStrategy())
	}
	if res.Typed() != nil {
		t.Errorf("a custom resource's strategy has a Go type")
	}
	obj := fromYAML(t, `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: default, finalizers: [hold, a.b, example.com/ok]}, spec: {size: 1}, status: {ready: true}}`)
	s.PrepareForCreate(t.Context(), obj)
	if _, hasStatus := obj.Object["status"]; hasStatus || obj.GetGeneration() != 1 {
		t.Errorf("prepared for create: %v", obj.Object)
	}
	if errs := s.Validate(t.Context(), obj); len(errs) > 0 {
		t.Errorf("valid widget refused: %v", errs)
	}
	want := []string{
		`metadata.finalizers: "a.b": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers`,
		`metadata.finalizers: "hold": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers`,
	}
	if got := s.WarningsOnCreate(t.Context(), obj); !slices.Equal(got, want) {
		t.Errorf("warnings %q", got)
	}
	table, err := s.ConvertToTable(t.Context(), obj, nil)
	if err != nil || len(table.Rows) != 1 || table.ColumnDefinitions[0].Name != "Name" {
		t.Errorf("table %+v, %v", table, err)
	}
}

// TestCustomResourceStatusStrategy: a /status write keeps everything but the status, and
// checks the status against the schema.
func TestCustomResourceStatusStrategy(t *testing.T) {
	status := widgets(t).Strategy.StatusStrategy()
	old := fromYAML(t, `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: default, resourceVersion: "3", generation: 1}, spec: {size: 1}}`)
	obj := fromYAML(t, `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: default, resourceVersion: "3", generation: 1}, spec: {size: 2}, status: {ready: "yes"}}`)
	status.PrepareForUpdate(t.Context(), obj, old)
	if size, _, _ := unstructured.NestedInt64(obj.Object, "spec", "size"); size != 1 {
		t.Errorf("a /status write changed the spec: %v", obj.Object)
	}
	errs := status.ValidateUpdate(t.Context(), obj, old)
	if len(errs) != 1 || errs[0].Field != "status.ready" {
		t.Errorf("errors %v, want one on status.ready", errs)
	}
}

// TestDefinitionStrategy: CRDs are prepared (names accepted, established), validated as
// apiextensions-apiserver does, held for cleanup on their first delete, and their /status
// writes validated as any update.
func TestDefinitionStrategy(t *testing.T) {
	crds := definitions(t)
	u := fromYAML(t, widgetsCRD)
	crds.Strategy.PrepareForCreate(t.Context(), u)
	if prepared, err := Decode(u.Object); err != nil || !apihelpers.IsCRDConditionTrue(prepared, apiextensionsv1.Established) || prepared.Status.AcceptedNames.Plural != "widgets" {
		t.Errorf("prepared: %+v, %v", prepared.Status, err)
	}
	if crds.Typed() == nil || crds.Strategy.AllowUnconditionalUpdate() || !crds.Strategy.TracksGeneration() {
		t.Errorf("the CRD type's strategy lost its Go type's rules")
	}
	bad := u.DeepCopy()
	unstructured.RemoveNestedField(bad.Object, "spec", "scope")
	if errs := crds.Strategy.Validate(t.Context(), bad); len(errs) == 0 || errs[0].Field != "spec.scope" {
		t.Errorf("a CRD without scope: %v", errs)
	}
	bad.SetResourceVersion("1")
	u.SetResourceVersion("1")
	main, status := crds.Strategy.ValidateUpdate(t.Context(), bad, u), crds.Strategy.StatusStrategy().ValidateUpdate(t.Context(), bad, u)
	if len(main) == 0 || len(main) != len(status) {
		t.Errorf("update errors %v, /status errors %v", main, status)
	}
	crds.Strategy.PrepareForDelete(t.Context(), u)
	crd, err := Decode(u.Object)
	if err != nil || !slices.Contains(crd.Finalizers, CleanupFinalizer) {
		t.Errorf("a deleted CRD is not held for cleanup: %v %v", crd.Finalizers, err)
	}
}

// TestDefinitionValidationErrors: an invalid CRD is refused with kube's causes, as a 422
// Invalid Status.
func TestDefinitionValidationErrors(t *testing.T) {
	crds := definitions(t)
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
			u := fromYAML(t, widgetsCRD)
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

// TestDefinitionUpdateKeepsStatusAndBumpsGeneration: an update keeps the stored status, and
// moves the generation only when the spec changes.
func TestDefinitionUpdateKeepsStatusAndBumpsGeneration(t *testing.T) {
	crds := definitions(t)
	old := fromYAML(t, widgetsCRD)
	crds.Strategy.PrepareForCreate(t.Context(), old)
	old.SetResourceVersion("5")

	same := old.DeepCopy()
	unstructured.RemoveNestedField(same.Object, "status")
	crds.Strategy.PrepareForUpdate(t.Context(), same, old)
	if same.GetGeneration() != 1 || !reflect.DeepEqual(same.Object["status"], old.Object["status"]) {
		t.Errorf("unchanged spec: generation %d, status %v", same.GetGeneration(), same.Object["status"])
	}

	changed := fromYAML(t, widgetsCRD)
	versions, _, _ := unstructured.NestedSlice(changed.Object, "spec", "versions")
	v2 := runtime.DeepCopyJSONValue(versions[0]).(map[string]any)
	v2["name"], v2["storage"] = "v2", false
	_ = unstructured.SetNestedSlice(changed.Object, append(versions, v2), "spec", "versions")
	changed.SetResourceVersion("5")
	crds.Strategy.PrepareForUpdate(t.Context(), changed, old)
	if changed.GetGeneration() != 2 {
		t.Errorf("changed spec: generation %d, want 2", changed.GetGeneration())
	}
	if errs := crds.Strategy.ValidateUpdate(t.Context(), changed, old); len(errs) > 0 {
		t.Errorf("valid update refused: %v", errs)
	}
}

// TestDefinitionInProtectedGroupGetsItsApprovalCondition: a CRD in a *.k8s.io group records
// whether its API was approved.
func TestDefinitionInProtectedGroupGetsItsApprovalCondition(t *testing.T) {
	crds := definitions(t)
	u := fromYAML(t, strings.ReplaceAll(widgetsCRD, "example.com", "x.k8s.io"))
	u.SetAnnotations(map[string]string{apiextensionsv1.KubeAPIApprovedAnnotation: "unapproved, testing"})
	crds.Strategy.PrepareForCreate(t.Context(), u)
	if errs := crds.Strategy.Validate(t.Context(), u); len(errs) > 0 {
		t.Fatal(errs)
	}
	crd, _ := Decode(u.Object)
	c := apihelpers.FindCRDCondition(crd, apiextensionsv1.KubernetesAPIApprovalPolicyConformant)
	if c == nil || c.Status != apiextensionsv1.ConditionFalse || c.Reason != "UnapprovedAnnotation" || c.Message != `not approved: "unapproved, testing"` || c.LastTransitionTime.IsZero() {
		t.Errorf("condition %+v, want False UnapprovedAnnotation", c)
	}
}
