package admission

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A custom resource's served versions are equivalent resources; a built-in's is its one
// version. Through /scale the kind is autoscaling/v1 Scale.
func TestObjectInterfacesReadTheCatalog(t *testing.T) {
	h := newHarness(t, harnessConfig{crds: []string{widgetCRD, sprocketCRD}})
	objects := objectInterfaces{h.catalog}
	if got := objects.EquivalentResourcesFor(widgetsV2, ""); !slices.Equal(got, []schema.GroupVersionResource{widgetsV1, widgetsV2}) {
		t.Errorf("widgets' equivalents %v, want v1 and v2", got)
	}
	if got := objects.EquivalentResourcesFor(configMaps, ""); !slices.Equal(got, []schema.GroupVersionResource{configMaps}) {
		t.Errorf("configmaps' equivalents %v", got)
	}
	sprockets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "sprockets"}
	for _, tt := range []struct {
		subresource string
		want        schema.GroupVersionKind
	}{{"", sprockets.GroupVersion().WithKind("Sprocket")}, {"status", sprockets.GroupVersion().WithKind("Sprocket")},
		{"scale", schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}}} {
		if got := objects.KindFor(sprockets, tt.subresource); got != tt.want {
			t.Errorf("kind for sprockets/%s: %v, want %v", tt.subresource, got, tt.want)
		}
	}
}

// The RESTMapper maps what the catalog serves now: a CRD created after its first use.
func TestRESTMapperFollowsTheCatalog(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	mapper := newCatalogRESTMapper(h.catalog)
	widgetKind := widgetsV1.GroupVersion().WithKind("Widget")
	if _, err := mapper.RESTMapping(widgetKind.GroupKind(), "v1"); err == nil {
		t.Fatal("Widget is mapped before its CRD exists")
	}
	h.createCRD(widgetCRD)
	mapping, err := mapper.RESTMapping(widgetKind.GroupKind(), "v1")
	if err != nil || mapping.Resource != widgetsV1 {
		t.Errorf("Widget maps to %v, %v; want %v", mapping, err, widgetsV1)
	}
	if kind, err := mapper.KindFor(configMaps); err != nil || kind.Kind != "ConfigMap" {
		t.Errorf("configmaps: %v, %v", kind, err)
	}
}
