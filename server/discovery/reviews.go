package discovery

import (
	"maps"
	"reflect"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/sqlkube/sqlkube/server/resource"
)

// reviews are the resources the server answers without storing anything (access, rules, token
// and self reviews): they take only a create. Discovery lists them as kube-apiserver does, so
// that clients which find a kind's resource through discovery (controller-runtime's RESTMapper,
// kubectl create -f) can send them.
var reviews = []*resource.Resource{
	review("authentication.k8s.io", "selfsubjectreviews", reflect.TypeFor[authenticationv1.SelfSubjectReview](), false),
	review("authentication.k8s.io", "tokenreviews", reflect.TypeFor[authenticationv1.TokenReview](), false),
	review("authorization.k8s.io", "localsubjectaccessreviews", reflect.TypeFor[authorizationv1.LocalSubjectAccessReview](), true),
	review("authorization.k8s.io", "selfsubjectaccessreviews", reflect.TypeFor[authorizationv1.SelfSubjectAccessReview](), false),
	review("authorization.k8s.io", "selfsubjectrulesreviews", reflect.TypeFor[authorizationv1.SelfSubjectRulesReview](), false),
	review("authorization.k8s.io", "subjectaccessreviews", reflect.TypeFor[authorizationv1.SubjectAccessReview](), false),
	// Not a review, but create-only and stored nowhere either: a pod's binding by its older path.
	review("", "bindings", reflect.TypeFor[corev1.Binding](), true),
}

func review(group, name string, goType reflect.Type, namespaced bool) *resource.Resource {
	reviewTypes[name] = goType
	return &resource.Resource{
		Group: group, Version: "v1", Name: name, SingularName: name[:len(name)-1], Kind: goType.Name(),
		Namespaced: namespaced, Verbs: []string{"create"},
	}
}

// reviewTypes are the reviews' Go types, by resource name: they have no strategy, which
// gives the stored types theirs.
var reviewTypes = map[string]reflect.Type{}

// goTypeOf is a built-in's or a review's Go type, for its OpenAPI schema.
func goTypeOf(r *resource.Resource) reflect.Type {
	if t := r.GoType(); t != nil {
		return t
	}
	return reviewTypes[r.Name]
}

// withReviews is the served resources and the reviews.
func withReviews(resources map[string]*resource.Resource) map[string]*resource.Resource {
	all := maps.Clone(resources)
	for _, r := range reviews {
		all[resource.GroupVersion(r.Group, r.Version)+"/"+r.Name] = r
	}
	return all
}
