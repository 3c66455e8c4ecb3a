package server

import (
	"encoding/json"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/authentication/install" // the reviews' and TokenRequest's defaults in legacyscheme.Scheme
	_ "k8s.io/kubernetes/pkg/apis/authorization/install"

	"github.com/sqlkube/sqlkube/server/registry/fieldmanagers"
	"github.com/sqlkube/sqlkube/server/resource"
)

// reviewTypes are the review resources, and TokenRequest (serviceaccounts/token), as their
// field managers read them: kube-apiserver's create handler records a review's managedFields
// (the client's Update of what it posted) before answering it, though nothing is stored. A
// SelfSubjectRulesReview is not among them: kube answers it with a new object, which has none.
var reviewTypes = map[string]*resource.Resource{
	"selfsubjectaccessreviews":  reviewType(authorizationv1.GroupName, "selfsubjectaccessreviews", "SelfSubjectAccessReview"),
	"subjectaccessreviews":      reviewType(authorizationv1.GroupName, "subjectaccessreviews", "SubjectAccessReview"),
	"localsubjectaccessreviews": reviewType(authorizationv1.GroupName, "localsubjectaccessreviews", "LocalSubjectAccessReview"),
	"selfsubjectreviews":        reviewType(authenticationv1.GroupName, "selfsubjectreviews", "SelfSubjectReview"),
	"tokenreviews":              reviewType(authenticationv1.GroupName, "tokenreviews", "TokenReview"),
	"serviceaccounts":           reviewType(authenticationv1.GroupName, "serviceaccounts", "TokenRequest"),
}

func reviewType(group, name, kind string) *resource.Resource {
	return &resource.Resource{Group: group, Version: "v1", Name: name, Kind: kind}
}

// reviewSubresource is the subresource a review type is posted to: TokenRequests to
// serviceaccounts/token.
func reviewSubresource(res *resource.Resource) string {
	if res.Kind == "TokenRequest" {
		return "token"
	}
	return ""
}

// createdFields are the managedFields kube-apiserver records for the review res posted in body
// by r's client: its fields as decoded (with the type's defaults) against the type's empty
// object, owned by the fieldManager option or the client's User-Agent. None for a body that
// does not decode, which the review refuses, and none for a type not in reviewTypes.
func createdFields(r *http.Request, res *resource.Resource, body []byte) []metav1.ManagedFieldsEntry {
	if res == nil {
		return nil
	}
	gvk := schema.GroupVersionKind{Group: res.Group, Version: res.Version, Kind: res.Kind}
	posted, err := legacyscheme.Scheme.New(gvk)
	if err != nil || json.Unmarshal(body, posted) != nil {
		return nil
	}
	legacyscheme.Scheme.Default(posted)
	empty, _ := legacyscheme.Scheme.New(gvk) // cannot fail: posted was made so
	obj, err := asUnstructured(gvk, posted)
	if err != nil {
		return nil
	}
	live, err := asUnstructured(gvk, empty)
	if err != nil {
		return nil
	}
	fm, err := fieldmanagers.For(res, reviewSubresource(res))
	if err != nil {
		return nil
	}
	manager := managerOrUserAgent(r.URL.Query().Get("fieldManager"), r.UserAgent())
	recorded, ok := fm.UpdateNoErrors(live, obj, manager).(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	return recorded.GetManagedFields()
}

func asUnstructured(gvk schema.GroupVersionKind, obj runtime.Object) (*unstructured.Unstructured, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	return u, nil
}
