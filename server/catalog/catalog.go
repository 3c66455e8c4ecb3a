// Package catalog keeps the set of served resources: the built-ins and the versions of the
// established CRDs, kept in sync with the CRDs in storage (whoever wrote them: this replica or
// another on the same database), with the naming controller apiextensions-apiserver runs
// in-process. Deleting the objects of a deleted CRD is controllers/crdcleanup's.
package catalog

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/crdtype"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Storage is what the catalog needs from the database layer. *sqlstore.Store implements it.
type Storage interface {
	Write(ctx context.Context, w sqlstore.Write) (sqlstore.Object, error)
	List(ctx context.Context, opts sqlstore.ListOptions, each func(sqlstore.Object) error) (sqlstore.ListResult, error)
	Watch(ctx context.Context, opts sqlstore.WatchOptions) (*sqlstore.Watcher, error)
}

// The store this package is run on implements Storage.
var _ Storage = (*sqlstore.Store)(nil)

// Catalog holds the served resources: the built-ins and the established CRDs' versions. It
// keeps the CRD types in sync with storage (see syncCRDs), so every replica sharing a database
// serves the same types.
type Catalog struct {
	store      Storage
	converters crdtype.Converters
	log        *slog.Logger
	builtins   []*resource.Resource
	access     *builtin.Access

	// createOnly are the create-only types (ServeCreateOnly), guarded by mu.
	createOnly []*resource.Resource

	mu        sync.RWMutex
	resources map[string]*resource.Resource // by group/version/name
	crds      map[string]*storedCRD
	// generation counts the changes of resources, for those who derive documents from them.
	generation uint64
	// seen is the newest revision the CRD sync has applied; advanced is closed and replaced
	// whenever seen moves, waking AfterWrite waiters.
	seen     int64
	advanced chan struct{}
}

// New serves the built-ins and the CRDs already stored, then keeps the CRD types in sync with
// storage until ctx ends. converters builds the CRDs' conversion webhook converters; without
// them (nil) CRDs with conversion strategy Webhook are not served.
func New(ctx context.Context, store Storage, converters crdtype.Converters, log *slog.Logger) (*Catalog, error) {
	g := &Catalog{store: store, converters: converters, log: log, advanced: make(chan struct{}), access: &builtin.Access{}}
	g.builtins = builtin.Resources(g.bindCRDHooks, g.access)
	revision, err := g.loadCRDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading custom resource definitions: %w", err)
	}
	go g.syncCRDs(ctx, revision)
	return g, nil
}

// Access is what the built-ins' strategies ask of the server, which binds it once it has its
// loopback client and authorizer.
func (g *Catalog) Access() *builtin.Access { return g.access }

// Lookup finds the resource served at group/version/name.
func (g *Catalog) Lookup(group, version, name string) (*resource.Resource, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	r, ok := g.resources[group+"/"+version+"/"+name]
	return r, ok
}

// replaceCRDs installs a new set of stored CRDs, seen up to revision: it recomputes the served
// resources and the discovery documents, then wakes those waiting for revision.
func (g *Catalog) replaceCRDs(crds map[string]*storedCRD, revision int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.replaceResourcesLocked(crds)
	g.advanceLocked(revision)
}

// replaceResourcesLocked recomputes the served resources from the built-ins, the create-only
// types and crds.
func (g *Catalog) replaceResourcesLocked(crds map[string]*storedCRD) {
	resources := map[string]*resource.Resource{}
	for _, r := range slices.Concat(g.builtins, g.createOnly) {
		resources[r.Group+"/"+r.Version+"/"+r.Name] = r
	}
	for _, crd := range crds {
		for _, r := range crd.served {
			key := r.Group + "/" + r.Version + "/" + r.Name
			if _, taken := resources[key]; taken {
				continue // a built-in keeps its path; the CRD's NamesAccepted says so
			}
			resources[key] = r
		}
	}
	g.crds, g.resources = crds, resources
	g.generation++
}

// ServeCreateOnly adds the create-only types (resource.CreateOnly: the reviews,
// namespaces/NS/bindings), whose handlers are built once the registry is: the assembly calls it
// before the server serves.
func (g *Catalog) ServeCreateOnly(types ...*resource.Resource) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.createOnly = append(g.createOnly, types...)
	g.replaceResourcesLocked(g.crds)
}

// advance records that the CRD sync has seen every change up to revision.
func (g *Catalog) advance(revision int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.advanceLocked(revision)
}

func (g *Catalog) advanceLocked(revision int64) {
	if revision <= g.seen {
		return
	}
	g.seen = revision
	close(g.advanced)
	g.advanced = make(chan struct{})
}

// WaitForRevision returns once the CRD sync has seen revision, or with ctx's error.
func (g *Catalog) WaitForRevision(ctx context.Context, revision int64) error {
	for {
		g.mu.RLock()
		seen, advanced := g.seen, g.advanced
		g.mu.RUnlock()
		if seen >= revision {
			return nil
		}
		select {
		case <-advanced:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the catalog to see revision %d (at %d): %w", revision, seen, ctx.Err())
		}
	}
}

// Resources returns the served resources by "group/version/name", and their generation, which
// changes whenever they do. The map must not be modified.
func (g *Catalog) Resources() (resources map[string]*resource.Resource, generation uint64) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.resources, g.generation
}

// storedCRD is a CRD as the catalog last read it from storage, with the resources it serves
// (built once per change: compiling schemas is not cheap).
type storedCRD struct {
	revision int64
	crd      *apiextensionsv1.CustomResourceDefinition
	served   []*resource.Resource
}

// crdWriteWait bounds how long a CRD write waits for the catalog to serve its result.
const crdWriteWait = 10 * time.Second

// bindCRDHooks gives the customresourcedefinitions resource apiextensions-apiserver's rules,
// judged against the names this catalog serves; a CRD write returns once it is served.
func (g *Catalog) bindCRDHooks(r *resource.Resource) {
	crdtype.BindHooks(r, g.namesTakenInGroup, func(ctx context.Context, revision int64) error {
		ctx, cancel := context.WithTimeout(ctx, crdWriteWait)
		defer cancel()
		return g.WaitForRevision(ctx, revision)
	})
}

// namesTakenInGroup collects the resource names (plural, singular, short names) and kinds
// (kind, list kind) that the built-ins and the other CRDs of group hold.
func (g *Catalog) namesTakenInGroup(group, except string) (resources, kinds sets.Set[string]) {
	resources, kinds = sets.New[string](), sets.New[string]()
	for _, r := range g.builtins {
		if r.Group == group {
			resources.Insert(r.Name, r.SingularName)
			resources.Insert(r.ShortNames...)
			kinds.Insert(r.Kind, r.ListKind)
		}
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	for name, stored := range g.crds {
		if name == except || stored.crd.Spec.Group != group {
			continue
		}
		names := stored.crd.Status.AcceptedNames
		resources.Insert(names.Plural, names.Singular)
		resources.Insert(names.ShortNames...)
		kinds.Insert(names.Kind, names.ListKind)
	}
	return resources, kinds
}

// StorageVersionResource is the storage version of crd as a resource, served or not (nil if it
// cannot be built): what its objects are deleted as when the CRD is deleted.
func (g *Catalog) StorageVersionResource(crd *apiextensionsv1.CustomResourceDefinition) *resource.Resource {
	return crdtype.StorageVersionResource(crd, g.converters, g.log)
}

// StorageResources lists one served Resource per stored type (built-ins and CRD types, not the
// create-only ones), the
// one serving the storage version if it is served, so that its objects need no conversion
// (with a conversion webhook, but those still stored in a former storage version).
func (g *Catalog) StorageResources() map[string]*resource.Resource {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := map[string]*resource.Resource{}
	for _, r := range g.resources {
		if r.Creater != nil {
			continue // stored nowhere
		}
		if prev, ok := out[r.StorageName]; !ok || (!prev.ServesStorageVersion() && r.ServesStorageVersion()) {
			out[r.StorageName] = r
		}
	}
	return out
}

// ResourceForKind finds the resource serving kind at apiVersion, as a REST mapper would.
func (g *Catalog) ResourceForKind(apiVersion, kind string) (*resource.Resource, bool) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, false
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	for _, r := range g.resources {
		if r.Group == gv.Group && r.Version == gv.Version && r.Kind == kind {
			return r, true
		}
	}
	return nil, false
}

// Changed returns a channel closed the next time the catalog's types may change.
func (g *Catalog) Changed() <-chan struct{} {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.advanced
}
