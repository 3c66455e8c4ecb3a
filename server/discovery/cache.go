package discovery

import (
	"sync"

	"github.com/sqlkube/sqlkube/server/resource"
)

// Catalog is where the served resources come from. *catalog.Catalog implements it.
type Catalog interface {
	// Resources returns the served resources and a generation that changes whenever they do.
	Resources() (resources map[string]*resource.Resource, generation uint64)
}

// Cache keeps the documents of the catalog's current resources, built again when they change.
type Cache struct {
	catalog Catalog
	// issuerDiscovery is true when the server serves the ServiceAccount issuer's discovery
	// documents (it issues tokens): the OpenAPI v3 root then lists their documents.
	issuerDiscovery bool

	mu         sync.Mutex
	generation uint64
	docs       *Docs
}

// NewCache serves the documents of catalog's resources; issuerDiscovery tells whether the server
// serves the ServiceAccount issuer's discovery documents.
func NewCache(catalog Catalog, issuerDiscovery bool) *Cache {
	return &Cache{catalog: catalog, issuerDiscovery: issuerDiscovery}
}

// Docs returns the documents of the resources served now.
func (c *Cache) Docs() *Docs {
	resources, generation := c.catalog.Resources()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.docs == nil || c.generation != generation {
		c.docs, c.generation = build(resources, c.issuerDiscovery), generation
	}
	return c.docs
}
