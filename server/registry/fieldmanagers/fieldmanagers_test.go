package fieldmanagers

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestManagedFieldsViewSetsWhatUnstructuredDoes checks that the managedFields a create and an
// update record are what Unstructured.SetManagedFields would have stored, field for field.
func TestManagedFieldsViewSetsWhatUnstructuredDoes(t *testing.T) {
	var res *resource.Resource
	for _, r := range builtin.Resources(func(*resource.Resource) {}, nil) {
		if r.StorageName == "configmaps" {
			res = r
		}
	}
	newObj := func(data map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "c", "namespace": "ns", "labels": map[string]any{"a": "b"}},
			"data":     data,
		}}
	}
	ctx := context.Background()
	created := Record(ctx, res, "", "first", newObj(map[string]any{"k": "v"}), nil)
	created.SetUID("u")
	updated := Record(ctx, res, "", "second", newObj(map[string]any{"k": "v", "l": "w"}), created)
	for _, obj := range []*unstructured.Unstructured{created, updated} {
		got, _, _ := unstructured.NestedSlice(obj.Object, "metadata", "managedFields")
		entries := obj.GetManagedFields()
		if len(entries) == 0 || len(entries) != len(got) {
			t.Fatalf("managedFields %v, read back as %v", got, entries)
		}
		for i := range entries {
			want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&entries[i])
			if err != nil || !reflect.DeepEqual(got[i], want) {
				t.Errorf("entry %d: got %#v, want %#v (%v)", i, got[i], want, err)
			}
		}
	}
	// Every field set, and an entry the converter makes from fieldsV1 that is not an object.
	for _, e := range []metav1.ManagedFieldsEntry{
		{Manager: "m", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", Time: &metav1.Time{Time: time.Unix(1e9, 5)},
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:a":{".":{},"k:{\"x\":1}":{}}}`)}, Subresource: "status"},
		{Time: &metav1.Time{}},
	} {
		got, ok := managedFieldsEntryContent(&e)
		want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&e)
		if !ok || err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%v: got %#v, want %#v (%v)", e, got, want, err)
		}
	}
	if _, ok := managedFieldsEntryContent(&metav1.ManagedFieldsEntry{FieldsV1: &metav1.FieldsV1{}}); ok {
		t.Errorf("an empty fieldsV1 is left to Unstructured.SetManagedFields")
	}
}
