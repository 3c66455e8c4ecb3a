package crdtype

import (
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"

	"github.com/sqlkube/sqlkube/server/crdschema"
	"github.com/sqlkube/sqlkube/server/resource"
)

// storageSchemaOf is the Schema of crd's storage version (nil if it does not compile), and
// whether it has defaults. kube-apiserver defaults what it reads from storage with the storage
// version's schema; objects of a CRD without such defaults were complete when written, and
// their stored bytes are served as they are.
func storageSchemaOf(crd *apiextensionsv1.CustomResourceDefinition, storageVersion string, served []*resource.Resource) (schema *crdschema.Schema, hasDefaults bool) {
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
