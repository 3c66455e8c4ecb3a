package discovery

import (
	"cmp"
	"maps"
	"slices"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/resource"
)

// LocalGroupVersion is a group version the server serves, for which kube-apiserver's aggregator
// keeps a local APIService (one without a service).
type LocalGroupVersion struct {
	Group, Version string
	// GroupPriorityMinimum and VersionPriority are kube-apiserver's for a built-in group version
	// (its apiVersionPriorities), 1000 and 100 for a CRD's (its CRD registration controller's).
	GroupPriorityMinimum, VersionPriority int32
	// CRD: only CRDs serve it, so its APIService comes and goes with them; the built-ins' are
	// registered at start.
	CRD bool
}

// The priorities of kube's CRD registration controller.
const (
	crdVersionPriority = 100
	// builtinVersionPriority is the version priority of most built-in group versions.
	builtinVersionPriority = 15
)

// versionPriorities are kube-apiserver's version priorities that are not builtinVersionPriority.
var versionPriorities = map[string]int32{
	"v1": 1, "autoscaling/v2": 30, builtin.FlowControlGroup + "/v1": 21, builtin.ResourceGroup + "/v1": 21,
}

// LocalGroupVersions are the group versions resources (and the reviews) serve, by name, but
// kube-aggregator's own (apiregistration.k8s.io), which has no APIService.
func LocalGroupVersions(resources map[string]*resource.Resource) []LocalGroupVersion {
	byName := map[string]LocalGroupVersion{}
	for _, r := range resources {
		local := LocalGroupVersion{Group: r.Group, Version: r.Version, CRD: r.CRDName != ""}
		if existing, seen := byName[local.Name()]; r.Group == builtin.APIRegistrationGroup || seen && !existing.CRD {
			continue // a built-in's group version stays one when a CRD serves in it too
		}
		if p, ok := groupPriorities[r.Group]; ok && !local.CRD {
			gv := resource.GroupVersion(r.Group, r.Version)
			local.GroupPriorityMinimum, local.VersionPriority = int32(p), cmp.Or(versionPriorities[gv], builtinVersionPriority)
		} else {
			local.GroupPriorityMinimum, local.VersionPriority = crdGroupPriority, crdVersionPriority
		}
		byName[local.Name()] = local
	}
	return slices.SortedFunc(maps.Values(byName), func(a, b LocalGroupVersion) int { return cmp.Compare(a.Name(), b.Name()) })
}

// Name is the name of the group version's APIService: "v1.apps", "v1." for the core group.
func (gv LocalGroupVersion) Name() string { return gv.Version + "." + gv.Group }
