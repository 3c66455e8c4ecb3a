package server

import "strings"

const (
	apiextensionsGroup = "apiextensions.k8s.io"
	coordinationGroup  = "coordination.k8s.io"
	crdStorageName     = "customresourcedefinitions." + apiextensionsGroup
)

// The verbs kube-apiserver's discovery lists for the built-ins, sorted as it lists them.
var (
	verbsAll          = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	verbsNoCollection = []string{"create", "delete", "get", "list", "patch", "update", "watch"}
	verbsSubresource  = []string{"get", "patch", "update"}
	verbsFinalize     = []string{"update"}
)

// builtinResources lists the built-in types, stored as opaque JSON beyond metadata, except
// customresourcedefinitions, whose hooks (bound to g) validate and establish CRDs.
func builtinResources(g *Registry) []*Resource {
	return []*Resource{
		builtin("", "v1", "namespaces", "Namespace", false, verbsNoCollection, func(r *Resource) {
			r.ShortNames = []string{"ns"}
			r.Status = true
			r.Finalize = true
		}),
		builtin("", "v1", "configmaps", "ConfigMap", true, verbsAll, func(r *Resource) {
			r.ShortNames = []string{"cm"}
		}),
		builtin("", "v1", "secrets", "Secret", true, verbsAll, nil),
		builtin("", "v1", "serviceaccounts", "ServiceAccount", true, verbsAll, func(r *Resource) {
			r.ShortNames = []string{"sa"}
		}),
		builtin("", "v1", "events", "Event", true, verbsAll, func(r *Resource) {
			r.ShortNames = []string{"ev"}
		}),
		builtin(coordinationGroup, "v1", "leases", "Lease", true, verbsAll, nil),
		builtin(apiextensionsGroup, "v1", "customresourcedefinitions", "CustomResourceDefinition", false, verbsAll, func(r *Resource) {
			r.ShortNames = []string{"crd", "crds"}
			r.Categories = []string{"api-extensions"}
			r.Status = true
			r.storageVersionHashVersion = "v1beta1"
			g.bindCRDHooks(r)
		}),
	}
}

// builtin describes a built-in type whose singular name is its lower-case kind, and which is
// stored in one version, then lets customize add what is particular to it.
func builtin(group, version, plural, kind string, namespaced bool, verbs []string, customize func(*Resource)) *Resource {
	r := &Resource{
		Group:          group,
		Version:        version,
		Name:           plural,
		SingularName:   strings.ToLower(kind),
		Kind:           kind,
		ListKind:       kind + "List",
		Namespaced:     namespaced,
		Verbs:          verbs,
		StorageName:    storageName(plural, group),
		StorageVersion: version,
	}
	r.Decode = builtinDecoders[r.StorageName]
	r.validateBuiltin = builtinValidators[r.StorageName]
	if table, ok := builtinTables[r.StorageName]; ok {
		r.Table = table
	}
	if customize != nil {
		customize(r)
	}
	return r
}

// storageName keys a type in storage: "plural.group", or just "plural" in the core group.
func storageName(plural, group string) string {
	if group == "" {
		return plural
	}
	return plural + "." + group
}
