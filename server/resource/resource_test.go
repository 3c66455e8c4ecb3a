package resource

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestWithoutStrategy: a resource without a strategy (the reviews) has no Go type.
func TestWithoutStrategy(t *testing.T) {
	r := &Resource{Group: "authorization.k8s.io", Version: "v1", Name: "subjectaccessreviews"}
	if r.GoType() != nil || r.Typed() != nil {
		t.Errorf("GoType %v, Typed %v", r.GoType(), r.Typed())
	}
}

// TestValidateMetadataNames: names are checked as kube-apiserver checks each type's: namespaces
// as DNS labels, RBAC objects as path segments, everything else as DNS subdomains.
func TestValidateMetadataNames(t *testing.T) {
	for _, tc := range []struct {
		res   *Resource
		name  string
		valid bool
	}{
		{&Resource{Name: "namespaces"}, "a.b", false},
		{&Resource{Name: "namespaces"}, "ab", true},
		{&Resource{Group: rbacGroup, Name: "clusterroles"}, "system:basic-user", true},
		{&Resource{Group: rbacGroup, Name: "clusterroles"}, "a/b", false},
		{&Resource{Name: "configmaps", Namespaced: true}, "a.b", true},
		{&Resource{Name: "configmaps", Namespaced: true}, "system:x", false},
	} {
		obj := &unstructured.Unstructured{Object: map[string]any{}}
		obj.SetName(tc.name)
		if tc.res.Namespaced {
			obj.SetNamespace("default")
		}
		if errs := ValidateMetadata(tc.res, obj, nil); (len(errs) == 0) != tc.valid {
			t.Errorf("%s %q: %v", tc.res.Name, tc.name, errs)
		}
	}
}
