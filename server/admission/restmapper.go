package admission

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sqlkube/sqlkube/server/catalog"
)

// catalogRESTMapper maps kinds to resources as the catalog serves them, CRDs included, for the
// admission policies' paramKind: it is rebuilt when the catalog changes.
type catalogRESTMapper struct {
	catalog *catalog.Catalog

	mu         sync.Mutex
	generation uint64
	built      bool
	mapper     *meta.DefaultRESTMapper
}

func newCatalogRESTMapper(c *catalog.Catalog) meta.RESTMapper {
	return &catalogRESTMapper{catalog: c}
}

// current is the mapping of what the catalog serves now.
func (m *catalogRESTMapper) current() meta.RESTMapper {
	m.mu.Lock()
	defer m.mu.Unlock()
	resources, generation := m.catalog.Resources()
	if m.built && generation == m.generation {
		return m.mapper
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, res := range resources {
		scope := meta.RESTScopeRoot
		if res.Namespaced {
			scope = meta.RESTScopeNamespace
		}
		gv := schema.GroupVersion{Group: res.Group, Version: res.Version}
		mapper.AddSpecific(gv.WithKind(res.Kind), gv.WithResource(res.Name), gv.WithResource(res.SingularName), scope)
	}
	m.mapper, m.generation, m.built = mapper, generation, true
	return mapper
}

func (m *catalogRESTMapper) KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return m.current().KindFor(resource)
}

func (m *catalogRESTMapper) KindsFor(resource schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return m.current().KindsFor(resource)
}

func (m *catalogRESTMapper) ResourceFor(input schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return m.current().ResourceFor(input)
}

func (m *catalogRESTMapper) ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return m.current().ResourcesFor(input)
}

func (m *catalogRESTMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	return m.current().RESTMapping(gk, versions...)
}

func (m *catalogRESTMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return m.current().RESTMappings(gk, versions...)
}

func (m *catalogRESTMapper) ResourceSingularizer(resource string) (string, error) {
	return m.current().ResourceSingularizer(resource)
}
