package server

import (
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/crdschema"
)

// storageSchemaOf is the Schema of crd's storage version (nil if it does not compile), and
// whether it has defaults. kube-apiserver defaults what it reads from storage with the storage
// version's schema; objects of a CRD without such defaults were complete when written, and
// their stored bytes are served as they are.
func storageSchemaOf(crd *apiextensionsv1.CustomResourceDefinition, storageVersion string, served []*Resource) (schema *crdschema.Schema, hasDefaults bool) {
	validation, err := apihelpers.GetSchemaForVersion(crd, storageVersion)
	if err != nil {
		return nil, false
	}
	for _, r := range served {
		if r.Version == storageVersion {
			schema = r.Schema
		}
	}
	if schema == nil { // a storage version that is not served
		if schema, err = crdschema.Compile(crd, storageVersion); err != nil {
			return nil, false
		}
	}
	return schema, schemaHasDefaults(validation)
}

// schemaHasDefaults reports whether a CRD version's schema sets defaults anywhere.
func schemaHasDefaults(v *apiextensionsv1.CustomResourceValidation) bool {
	if v == nil || v.OpenAPIV3Schema == nil {
		return false
	}
	internal := &apiextensionsinternal.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.OpenAPIV3Schema, internal, nil); err != nil {
		return false // such a schema does not compile: its versions are not served
	}
	return apiextensionsvalidation.SchemaHas(internal, func(s *apiextensionsinternal.JSONSchemaProps) bool {
		return s.Default != nil
	})
}

// readStored prepares a stored object, already rewritten to r's version, for serving as
// kube-apiserver's storage decoder and version converter do: defaulted by the storage version's
// schema (so that an object stored before a default was added reads with it), then pruned by
// r's own schema when r is another version.
func (r *Resource) readStored(obj *unstructured.Unstructured) error {
	if r.readsDefaults {
		if err := r.storageSchema.ReadStored(obj); err != nil {
			return fmt.Errorf("decoding stored %s %q: %w", r.Kind, obj.GetName(), err)
		}
	}
	if r.Schema != nil && r.Version != r.StorageVersion {
		if _, err := r.Schema.Prune(obj); err != nil {
			return fmt.Errorf("converting stored %s %q to %s: %w", r.Kind, obj.GetName(), r.Version, err)
		}
	}
	return nil
}

// pruneForStorage drops from an object written through another version than the storage
// version the fields the storage version's schema does not have, as kube-apiserver's
// conversion to the storage version does. The object was decoded and validated already: its
// metadata is well-formed, so pruning cannot fail.
func (r *Resource) pruneForStorage(obj *unstructured.Unstructured) {
	if r.storageSchema != nil && r.Version != r.StorageVersion {
		_, _ = r.storageSchema.Prune(obj)
	}
}
