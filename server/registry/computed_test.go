package registry

import (
	"context"
	"encoding/json"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// TestComputedTypes: a computed type's objects are computed at each read: a get finds one by
// name or answers kube's NotFound naming the type by its singular name; a list selects by labels
// and metadata fields, and has no resourceVersion. Nothing is read from storage (there is none).
func TestComputedTypes(t *testing.T) {
	object := func(name string, labels map[string]string) *unstructured.Unstructured {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ComponentStatus"}}
		obj.SetName(name)
		obj.SetLabels(labels)
		return obj
	}
	res := &resource.Resource{Version: "v1", Name: "componentstatuses", SingularName: "componentstatus", Kind: "ComponentStatus",
		Computed: func(context.Context) []*unstructured.Unstructured {
			return []*unstructured.Unstructured{object("database", map[string]string{"tier": "storage"}), object("other", nil)}
		}}
	r := &Registry{}
	stored, err := r.Get(t.Context(), Ref{Resource: res, Name: "database"}, &metav1.GetOptions{})
	if got := nameOf(t, stored); err != nil || got != "database" {
		t.Fatalf("get: %q, %v", got, err)
	}
	_, err = r.Get(t.Context(), Ref{Resource: res, Name: "missing"}, &metav1.GetOptions{})
	if !apierrors.IsNotFound(err) || err.Error() != `componentstatus "missing" not found` {
		t.Fatalf("get of a missing one: %v", err)
	}
	for selector, want := range map[*internalversion.ListOptions][]string{
		{}: {"database", "other"},
		{LabelSelector: labels.SelectorFromSet(labels.Set{"tier": "storage"})}:               {"database"},
		{FieldSelector: fields.OneTermEqualSelector("metadata.name", "other")}:               {"other"},
		{FieldSelector: fields.OneTermNotEqualSelector("metadata.namespace", "")}:            nil,
		{LabelSelector: labels.SelectorFromSet(labels.Set{"tier": "x"}), FieldSelector: nil}: nil,
	} {
		var got []string
		meta, err := r.List(t.Context(), Ref{Resource: res}, selector, func(o sqlstore.Object) error {
			got = append(got, nameOf(t, o))
			return nil
		})
		if err != nil || meta.ResourceVersion != "" || len(got) != len(want) || (len(got) > 0 && got[0] != want[0]) {
			t.Errorf("list %v %v: %v, %+v, %v; want %v", selector.LabelSelector, selector.FieldSelector, got, meta, err, want)
		}
	}
}

func nameOf(t *testing.T, o sqlstore.Object) string {
	t.Helper()
	var obj metav1.PartialObjectMetadata
	if len(o.Value) > 0 {
		if err := json.Unmarshal(o.Value, &obj); err != nil {
			t.Fatal(err)
		}
	}
	return obj.Name
}
