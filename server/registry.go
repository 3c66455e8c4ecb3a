package server

import "sync"

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
