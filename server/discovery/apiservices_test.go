package discovery

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/server/reviews"
)

// TestLocalGroupVersionsAreKubes: the built-ins' group versions get kube-apiserver's priorities,
// the reviews' too, a CRD's kube's CRD registration controller's, and kube-aggregator's own
// group none.
func TestLocalGroupVersionsAreKubes(t *testing.T) {
	resources := map[string]*resource.Resource{}
	for _, r := range append(builtin.Resources(func(*resource.Resource) {}, nil), reviews.New(nil, nil, nil).Resources()...) {
		resources[resource.GroupVersion(r.Group, r.Version)+"/"+r.Name] = r
	}
	crd := &resource.Resource{Group: "example.com", Version: "v1", Name: "things", CRDName: "things.example.com"}
	inApps := &resource.Resource{Group: builtin.AppsGroup, Version: "v1", Name: "gadgets", CRDName: "gadgets.apps"}
	resources["example.com/v1/things"], resources["apps/v1/gadgets"] = crd, inApps
	got := map[string]LocalGroupVersion{}
	for _, gv := range LocalGroupVersions(resources) {
		got[gv.Name()] = gv
	}
	for name, want := range map[string]LocalGroupVersion{
		"v1.":                     {Version: "v1", GroupPriorityMinimum: 18000, VersionPriority: 1},
		"v1.apps":                 {Group: "apps", Version: "v1", GroupPriorityMinimum: 17800, VersionPriority: 15},
		"v2.autoscaling":          {Group: "autoscaling", Version: "v2", GroupPriorityMinimum: 17500, VersionPriority: 30},
		"v1.autoscaling":          {Group: "autoscaling", Version: "v1", GroupPriorityMinimum: 17500, VersionPriority: 15},
		"v1.authorization.k8s.io": {Group: "authorization.k8s.io", Version: "v1", GroupPriorityMinimum: 17600, VersionPriority: 15},
		"v1.resource.k8s.io":      {Group: "resource.k8s.io", Version: "v1", GroupPriorityMinimum: 16200, VersionPriority: 21},
		"v1.apiextensions.k8s.io": {Group: "apiextensions.k8s.io", Version: "v1", GroupPriorityMinimum: 16700, VersionPriority: 15},
		"v1.example.com":          {Group: "example.com", Version: "v1", GroupPriorityMinimum: 1000, VersionPriority: 100, CRD: true},
	} {
		if diff := cmp.Diff(want, got[name]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	if _, ok := got["v1.apiregistration.k8s.io"]; ok {
		t.Error("kube-aggregator's own group version has an APIService")
	}
	if len(got) != 23 {
		t.Errorf("%d group versions: %v", len(got), got)
	}
}
