package resource_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sqlkube/sqlkube/server/resource"
)

var (
	namespaces = &resource.Resource{Version: "v1", Name: "namespaces", Kind: "Namespace", StorageVersion: "v1"}
	configMaps = &resource.Resource{Version: "v1", Name: "configmaps", Kind: "ConfigMap", Namespaced: true, StorageVersion: "v1"}
	roles      = &resource.Resource{Group: "rbac.authorization.k8s.io", Version: "v1", Name: "roles", Kind: "Role", Namespaced: true, StorageVersion: "v1"}
	widgets    = &resource.Resource{Group: "example.com", Version: "v2", Name: "widgets", Kind: "Widget", Namespaced: true, StorageVersion: "v1"}
)

func objectNamed(name, namespace string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetName(name)
	u.SetNamespace(namespace)
	return u
}

// fieldsOf lists the fields errs name, in order.
func fieldsOf(errs field.ErrorList) []string {
	var fields []string
	for _, err := range errs {
		fields = append(fields, err.Type.String()+" "+err.Field)
	}
	return fields
}

// Names are validated as kube-apiserver validates them per type: namespaces are DNS labels,
// RBAC objects any path segment, every other type a DNS subdomain; scope decides whether a
// namespace is required or refused.
func TestValidateMetadataNames(t *testing.T) {
	tests := []struct {
		res             *resource.Resource
		name, namespace string
		want            []string
	}{
		{namespaces, "demo", "", nil},
		{namespaces, "a.b", "", []string{"Invalid value metadata.name"}},
		{configMaps, "a.b", "default", nil},
		{configMaps, "A", "default", []string{"Invalid value metadata.name"}},
		{configMaps, "a", "", []string{"Required value metadata.namespace"}},
		{namespaces, "demo", "default", []string{"Forbidden metadata.namespace"}},
		{roles, "system:basic-user", "default", nil},
		{roles, "a/b", "default", []string{"Invalid value metadata.name"}},
		{configMaps, "system:basic-user", "default", []string{"Invalid value metadata.name"}},
	}
	for _, tt := range tests {
		got := fieldsOf(resource.ValidateMetadata(tt.res, objectNamed(tt.name, tt.namespace), nil))
		if len(got) != len(tt.want) || (len(got) > 0 && got[0] != tt.want[0]) {
			t.Errorf("%s %q in %q: %v, want %v", tt.res.Name, tt.name, tt.namespace, got, tt.want)
		}
	}
}

// An update cannot change what metadata fixes at creation.
func TestValidateMetadataUpdate(t *testing.T) {
	old := objectNamed("a", "default")
	old.SetUID("uid-1")
	old.SetResourceVersion("5")
	old.SetCreationTimestamp(metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	same := old.DeepCopy()
	same.SetLabels(map[string]string{"changed": "yes"})
	if errs := resource.ValidateMetadata(configMaps, same, old); len(errs) > 0 {
		t.Fatalf("a label change: %v", errs)
	}
	changed := old.DeepCopy()
	changed.SetUID("uid-2")
	changed.SetCreationTimestamp(metav1.NewTime(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)))
	got := fieldsOf(resource.ValidateMetadata(configMaps, changed, old))
	want := []string{"Invalid value metadata.uid", "Invalid value metadata.creationTimestamp"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("uid and creationTimestamp changed: %v, want %v", got, want)
	}
}

// MarkDeleting sets deletionTimestamp once, the grace period to 0, and bumps a tracked
// generation only when it first marks the object.
func TestMarkDeleting(t *testing.T) {
	obj := objectNamed("held", "default")
	obj.SetGeneration(3)
	resource.MarkDeleting(obj)
	first := obj.GetDeletionTimestamp()
	if first == nil || time.Since(first.Time) > time.Minute || obj.GetGeneration() != 4 ||
		obj.GetDeletionGracePeriodSeconds() == nil || *obj.GetDeletionGracePeriodSeconds() != 0 {
		t.Fatalf("marked: %v", obj.Object)
	}
	resource.MarkDeleting(obj)
	if !obj.GetDeletionTimestamp().Equal(first) || obj.GetGeneration() != 4 {
		t.Fatalf("marked twice: %v", obj.Object)
	}
	untracked := objectNamed("cm", "default")
	resource.MarkDeleting(untracked)
	if untracked.GetGeneration() != 0 {
		t.Fatalf("a type without generation got one: %v", untracked.Object)
	}
}

func TestNames(t *testing.T) {
	if got := resource.GroupVersion("", "v1"); got != "v1" {
		t.Errorf("core group version %q", got)
	}
	if got := widgets.APIVersion(); got != "example.com/v2" {
		t.Errorf("widgets apiVersion %q", got)
	}
	if got := widgets.GroupResource(); got != (schema.GroupResource{Group: "example.com", Resource: "widgets"}) {
		t.Errorf("widgets GroupResource %v", got)
	}
	if got := widgets.GroupKind(); got != (schema.GroupKind{Group: "example.com", Kind: "Widget"}) {
		t.Errorf("widgets GroupKind %v", got)
	}
	if !widgets.NeedsConversion() || configMaps.NeedsConversion() {
		t.Errorf("NeedsConversion: widgets %v, configmaps %v", widgets.NeedsConversion(), configMaps.NeedsConversion())
	}
}

// A failed webhook conversion answers as kube-apiserver answers an error without a Status: 500,
// no reason, the converter's message.
func TestConversionErrorStatus(t *testing.T) {
	cause := errors.New("webhook down")
	err := &resource.ConversionError{Err: cause}
	if !errors.Is(err, cause) {
		t.Fatal("the conversion error hides its cause")
	}
	want := metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: "webhook down"}
	if got := err.Status(); got.Status != want.Status || got.Code != want.Code || got.Message != want.Message || got.Reason != "" {
		t.Fatalf("Status %+v, want %+v", got, want)
	}
}

// Without a schema or a webhook (conversion strategy None), versions differ only by apiVersion:
// a write through v2 is stored as v1, a stored v1 object is served as v2.
func TestVersionsWithoutConversionWebhook(t *testing.T) {
	obj := objectNamed("w", "default")
	obj.SetAPIVersion("example.com/v2")
	obj.Object["spec"] = map[string]any{"color": "red"}
	stored, err := widgets.ConvertToStorage(obj)
	if err != nil || stored != obj {
		t.Fatalf("ConvertToStorage without a webhook: %v, %v", stored, err)
	}
	widgets.ToStorage(stored)
	if stored.GetAPIVersion() != "example.com/v1" || stored.Object["spec"] == nil {
		t.Fatalf("stored as %v", stored.Object)
	}
	served, err := widgets.ReadStored(stored)
	if err != nil || served.GetAPIVersion() != "example.com/v2" || served.Object["spec"] == nil {
		t.Fatalf("served as %v, %v", served, err)
	}
}
