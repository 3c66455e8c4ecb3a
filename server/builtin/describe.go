package builtin

import "github.com/sqlkube/sqlkube/server/resource"

// describe composes the customizations of a built-in's description (builtin's customize).
func describe(parts ...func(*resource.Resource)) func(*resource.Resource) {
	return func(r *resource.Resource) {
		for _, part := range parts {
			part(r)
		}
	}
}

// shortName gives a type the short name kube's storage of it lists.
func shortName(name string) func(*resource.Resource) {
	return func(r *resource.Resource) { r.ShortNames = []string{name} }
}

// inCategoryAll puts a type in category all (`kubectl get all`), as kube's storage of it does.
func inCategoryAll(r *resource.Resource) { r.Categories = []string{"all"} }

// hashedAs names the version kube-apiserver v1.37 writes the type in, from which discovery's
// storageVersionHash is computed, where it is not the served one: CRDs are still written in
// v1beta1, and a type that became GA lately is written in its previous version for a release,
// so that a downgraded server can read it.
func hashedAs(version string) func(*resource.Resource) {
	return func(r *resource.Resource) { r.StorageVersionHashVersion = version }
}
