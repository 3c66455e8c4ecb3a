package fieldmanagers

import (
	"encoding/json"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/authentication/install" // the reviews' and TokenRequest's defaults in legacyscheme.Scheme
	_ "k8s.io/kubernetes/pkg/apis/authorization/install"

	"github.com/sqlkube/sqlkube/server/resource"
)

// Created are the managedFields kube-apiserver's create handler records for an object of a
// built-in kind that is not stored (a review; a TokenRequest, posted to the subresource
// serviceaccounts/token), before it answers: the fields of body as decoded (with the kind's
// defaults) against the kind's empty object, owned by manager. None for a body that does not
// decode, which the handler refuses anyway.
func Created(gvk schema.GroupVersionKind, resourceName, subresource string, body []byte, manager string) []metav1.ManagedFieldsEntry {
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
	fm, err := For(createdResource(gvk, resourceName), subresource)
	if err != nil {
		return nil
	}
	recorded, ok := fm.UpdateNoErrors(live, obj, manager).(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	return recorded.GetManagedFields()
}

// createdResources keeps one description per kind Created records, so that For's cache (by
// description) keeps their field managers.
var createdResources sync.Map // schema.GroupVersionKind → *resource.Resource

func createdResource(gvk schema.GroupVersionKind, name string) *resource.Resource {
	res, _ := createdResources.LoadOrStore(gvk, &resource.Resource{Group: gvk.Group, Version: gvk.Version, Name: name, Kind: gvk.Kind})
	return res.(*resource.Resource)
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
