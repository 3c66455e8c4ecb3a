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

// storageDefaults is the Schema of crd's storage version when that version's schema sets
// defaults, nil otherwise. kube-apiserver defaults what it reads from storage with the storage
// version's schema; objects of a CRD without such defaults were complete when written, and
// their stored bytes are served as they are.
func storageDefaults(crd *apiextensionsv1.CustomResourceDefinition, storageVersion string, served []*Resource) *crdschema.Schema {
	validation, err := apihelpers.GetSchemaForVersion(crd, storageVersion)
	if err != nil || !schemaHasDefaults(validation) {
		return nil
	}
	for _, r := range served {
		if r.Version == storageVersion {
			return r.Schema
		}
	}
	schema, err := crdschema.Compile(crd, storageVersion) // a storage version that is not served
	if err != nil {
		return nil
	}
	return schema
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
// r's own schema when r is another version (which drops the fields only the storage version
// has).
func (r *Resource) readStored(obj *unstructured.Unstructured) error {
	if r.storageDefaults != nil {
		if err := r.storageDefaults.ReadStored(obj); err != nil {
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
