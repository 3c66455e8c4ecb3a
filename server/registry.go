package server

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints/discovery"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/sqlkube/sqlkube/server/crdschema"
)

// Resource describes one served resource at one group version: a built-in or a CRD's version.
type Resource struct {
	Group        string // "" for the core group
	Version      string
	Name         string // plural, lower case: "configmaps"
	SingularName string
	Kind         string
	ListKind     string
	Namespaced   bool
	ShortNames   []string
	Categories   []string
	Verbs        []string
	// StorageName keys the type in storage ("resource.group", the same for every version of the
	// type), so that all versions of one type share their objects.
	StorageName string
	// StorageVersion is the version objects are stored in. For a CRD's non-storage versions it
	// differs from Version: use ToStorage and FromStorage to rewrite apiVersion (conversion
	// strategy None).
	StorageVersion string
	// storageVersionHashVersion, when set, is the version kube-apiserver encodes the type in in
	// etcd, which discovery's storageVersionHash names (CRDs: v1beta1); else StorageVersion.
	storageVersionHashVersion string
	// Status is true when the type has a /status subresource.
	Status bool
	// Scale is set when the type has a /scale subresource.
	Scale *ScaleSubresource
	// Finalize is true when the type has a /finalize subresource (namespaces: an update that
	// writes only spec.finalizers).
	Finalize bool
	// CRDName names the CustomResourceDefinition this type comes from; empty for built-ins.
	CRDName string
	// definition is that CustomResourceDefinition, as the registry read it.
	definition *apiextensionsv1.CustomResourceDefinition
	// Terminating is true for the types of a CRD being deleted: its objects are being removed,
	// and creates are refused with 405 MethodNotAllowed as apiextensions-apiserver does.
	Terminating bool
	// DeprecationWarning, when set, is the Warning header every request to this version gets
	// (a CRD version marked deprecated).
	DeprecationWarning string

	// Table gives a built-in its Table columns and rows as kube-apiserver prints them; nil
	// for the types that use the default columns (Name, Created At) and for CRD versions,
	// whose Schema has the printer columns.
	Table rest.TableConvertor

	// Schema is set for a CRD's versions: the custom resource strategy (pruning, defaulting,
	// reading stored objects, /status writes, field selectors, Table). The hooks below already
	// delegate to its PrepareForCreate, PrepareForUpdate and Validate.
	Schema *crdschema.Schema
	// storageSchema is the Schema of the CRD's storage version (see readStored and
	// pruneForStorage); readsDefaults is set when that schema has defaults, which stored objects
	// get when they are read.
	storageSchema *crdschema.Schema
	readsDefaults bool

	// Per-type hooks the write path calls; each may be nil.
	//
	// Decode reads a request body, as JSON (for a patch, the patched object), as the type's Go
	// type, as kube-apiserver's decoder does: it returns the object's content as the type
	// encodes it, without the fields the type does not know, and the body's strict errors
	// (duplicate and unknown fields, `unknown field "spec.foo"`, in document order) for the
	// fieldValidation warnings or Strict error. An error means the body does not decode as the
	// type: kube-apiserver answers 400 "KIND in version "V" cannot be handled as a KIND: <err>".
	// Set for the built-ins; CRD versions have their Schema's PruneAndDefault instead.
	Decode func(data []byte) (content map[string]any, strictErrs []error, err error)
	//
	// PrepareForCreate adjusts a new object before validation (for example, sets the status a
	// type starts with).
	PrepareForCreate func(obj *unstructured.Unstructured)
	// PrepareForUpdate adjusts an update of the main resource before validation given the
	// stored object (for example, keeps the stored status).
	PrepareForUpdate func(obj, old *unstructured.Unstructured)
	// PrepareForDelete runs on the stored object when a delete is requested for an object
	// that has no deletionTimestamp yet. It may add finalizers: the delete then becomes an
	// update that sets deletionTimestamp (200 with the object), as for any object with
	// finalizers. CRDs use it to add the cleanup finalizer that deletes their objects.
	PrepareForDelete func(obj *unstructured.Unstructured)
	// Validate checks an object; old is nil on create. Errors become 422 Invalid through
	// apierrors.NewInvalid(kind, name, errs).
	Validate func(obj, old *unstructured.Unstructured) field.ErrorList
	// validateBuiltin, for the built-ins kube-apiserver validates beyond metadata, replaces the
	// generic metadata validation and Validate: it reads the object as its Go type for both.
	validateBuiltin func(res *Resource, obj, old *unstructured.Unstructured) field.ErrorList
	// Warnings returns the warnings (Warning headers) for a valid write; old is nil on create.
	Warnings func(obj, old *unstructured.Unstructured) []string
	// AfterWrite runs after a successful write (create, update, delete) at revision, before the
	// reply. For CRDs it waits until the registry has seen that revision, so the type is served
	// (or gone) when the request returns. An error means it gave up waiting: the write itself
	// succeeded, so log it rather than fail the request.
	AfterWrite func(ctx context.Context, revision int64) error
}

// ScaleSubresource names where a type keeps the fields the autoscaling/v1 Scale exposes.
type ScaleSubresource struct {
	SpecReplicasPath   string
	StatusReplicasPath string
	LabelSelectorPath  string
}

// APIVersion is "group/version", or "version" for the core group.
func (r *Resource) APIVersion() string {
	return groupVersion(r.Group, r.Version)
}

// ToStorage rewrites an object written through r to the storage version (CRD conversion
// strategy None changes nothing but apiVersion). Call it before storing.
func (r *Resource) ToStorage(obj *unstructured.Unstructured) {
	obj.SetAPIVersion(groupVersion(r.Group, r.StorageVersion))
	r.pruneForStorage(obj)
}

// FromStorage rewrites a stored object to the version r serves. Call it on every object read
// from storage (get, list items, watch events) before encoding it.
func (r *Resource) FromStorage(obj *unstructured.Unstructured) {
	obj.SetAPIVersion(r.APIVersion())
}

// NeedsConversion is true when stored objects must be decoded (FromStorage, then readStored)
// before being served through r, so that stored bytes can be streamed as they are otherwise.
func (r *Resource) NeedsConversion() bool {
	return r.StorageVersion != r.Version || r.readsDefaults
}

// storageVersionHash is the hash discovery lists for r, as kube-apiserver computes it.
func (r *Resource) storageVersionHash() string {
	return discovery.StorageVersionHash(r.Group, cmp.Or(r.storageVersionHashVersion, r.StorageVersion), r.Kind)
}

func groupVersion(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}

// Registry holds the served resources: the built-ins and the established CRDs' versions. It
// keeps the CRD types in sync with storage (see syncCRDs), so every replica sharing a database
// serves the same types.
type Registry struct {
	store    Storage
	log      *slog.Logger
	builtins []*Resource

	mu        sync.RWMutex
	resources map[string]*Resource // by group/version/name
	crds      map[string]*storedCRD
	docs      *discoveryDocs
	// seen is the newest revision the CRD sync has applied; advanced is closed and replaced
	// whenever seen moves, waking AfterWrite waiters.
	seen     int64
	advanced chan struct{}

	// cleaning holds the UIDs of the deleted CRDs whose objects this process is deleting.
	cleaningMu sync.Mutex
	cleaning   map[types.UID]bool
}

// newRegistry serves the built-ins and the CRDs already stored, then keeps the CRD types in
// sync with storage until ctx ends.
func newRegistry(ctx context.Context, store Storage, log *slog.Logger) (*Registry, error) {
	g := &Registry{store: store, log: log, advanced: make(chan struct{}), cleaning: map[types.UID]bool{}}
	g.builtins = builtinResources(g)
	revision, err := g.loadCRDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading custom resource definitions: %w", err)
	}
	go g.syncCRDs(ctx, revision)
	return g, nil
}

// Lookup finds the resource served at group/version/name.
func (g *Registry) Lookup(group, version, name string) (*Resource, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	r, ok := g.resources[group+"/"+version+"/"+name]
	return r, ok
}

// replaceCRDs installs a new set of stored CRDs, seen up to revision: it recomputes the served
// resources and the discovery documents, then wakes those waiting for revision.
func (g *Registry) replaceCRDs(crds map[string]*storedCRD, revision int64) {
	resources := map[string]*Resource{}
	for _, r := range g.builtins {
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
	docs := buildDiscovery(resources)

	g.mu.Lock()
	defer g.mu.Unlock()
	g.crds, g.resources, g.docs = crds, resources, docs
	g.advanceLocked(revision)
}

// advance records that the CRD sync has seen every change up to revision.
func (g *Registry) advance(revision int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.advanceLocked(revision)
}

func (g *Registry) advanceLocked(revision int64) {
	if revision <= g.seen {
		return
	}
	g.seen = revision
	close(g.advanced)
	g.advanced = make(chan struct{})
}

// waitForRevision returns once the CRD sync has seen revision, or with ctx's error.
func (g *Registry) waitForRevision(ctx context.Context, revision int64) error {
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
			return fmt.Errorf("waiting for the registry to see revision %d (at %d): %w", revision, seen, ctx.Err())
		}
	}
}

// discovery returns the current discovery documents.
func (g *Registry) discovery() *discoveryDocs {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.docs
}
