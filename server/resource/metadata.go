package resource

import (
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateMetadata is kube-apiserver's validation of every object's metadata, with an update's
// immutability rules when old is not nil. The registry runs it on every write; the built-ins'
// own validation runs it on their Go types instead (see Strategy).
func ValidateMetadata(res *Resource, obj, old metav1.Object) field.ErrorList {
	path := field.NewPath("metadata")
	errs := validation.ValidateObjectMetaAccessor(obj, res.Namespaced, nameValidator(res), path)
	if old != nil {
		errs = append(errs, validation.ValidateObjectMetaAccessorUpdate(obj, old, path)...)
	}
	return errs
}

// nameValidator is how kube-apiserver validates names of res: namespaces are DNS labels, RBAC
// roles and bindings any name that fits in a URL path segment (so that "system:basic-user" is
// one), every other type we serve a DNS subdomain.
func nameValidator(res *Resource) validation.ValidateNameFunc {
	switch {
	case res.Group == "" && res.Name == "namespaces":
		return validation.NameIsDNSLabel
	case res.Group == rbacGroup:
		return path.ValidatePathSegmentName
	}
	return validation.NameIsDNSSubdomain
}

const rbacGroup = "rbac.authorization.k8s.io"
