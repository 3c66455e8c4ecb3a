package server

import (
	"fmt"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// schemaHasDefaults reports whether a CRD version's schema sets defaults anywhere. Only such
// versions need their stored objects decoded on every read (see readStored): the others were
// defaulted when written, and their stored bytes are served as they are.
func schemaHasDefaults(v *apiextensionsv1.CustomResourceValidation) bool {
	if v == nil || v.OpenAPIV3Schema == nil {
		return false
	}
	internal := &apiextensionsinternal.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.OpenAPIV3Schema, internal, nil); err != nil {
		return false // the version is not served: its schema does not compile either
	}
	return apiextensionsvalidation.SchemaHas(internal, func(s *apiextensionsinternal.JSONSchemaProps) bool {
		return s.Default != nil
	})
}

// readStored prepares a stored object, already in r's version, for serving as kube-apiserver's
// storage decoder does: an object stored before a default was added to the schema is read
// with that default (and without fields the schema no longer has).
func (r *Resource) readStored(obj *unstructured.Unstructured) error {
	if !r.readsDefaults {
		return nil
	}
	if err := r.Schema.ReadStored(obj); err != nil {
		return fmt.Errorf("decoding stored %s %q: %w", r.Kind, obj.GetName(), err)
	}
	return nil
}
