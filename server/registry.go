package server

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
	// Status is true when the type has a /status subresource.
	Status bool
	// Scale is set when the type has a /scale subresource.
	Scale *ScaleSubresource

	// Per-type hooks the write path calls; each may be nil.
	//
	// PrepareForCreate adjusts a new object before validation (for example, sets the status a
	// type starts with).
	PrepareForCreate func(obj *unstructured.Unstructured)
	// PrepareForUpdate adjusts an update of the main resource before validation given the
	// stored object (for example, keeps the stored status).
	PrepareForUpdate func(obj, old *unstructured.Unstructured)
	// Validate checks an object; old is nil on create. Errors become 422 Invalid through
	// apierrors.NewInvalid(kind, name, errs).
	Validate func(obj, old *unstructured.Unstructured) field.ErrorList
	// AfterWrite runs after a successful write (create, update, delete) at revision, before the
	// reply. For CRDs it waits until the registry has seen that revision, so the type is served
	// (or gone) when the request returns.
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
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// Registry holds the served resources: the built-ins and the established CRDs' versions.
type Registry struct {
	mu        sync.RWMutex
	resources map[string]*Resource // by group/version/name
}

// Lookup finds the resource served at group/version/name.
func (g *Registry) Lookup(group, version, name string) (*Resource, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	r, ok := g.resources[group+"/"+version+"/"+name]
	return r, ok
}
