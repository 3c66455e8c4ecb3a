package crdschema

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// OpenAPIV3 builds the OpenAPI v3 document of one version of crd, paths and schemas, as
// kube-apiserver publishes it. The document served at /openapi/v3/apis/GROUP/VERSION is
// MergeOpenAPIV3 of those of every CRD serving that group version.
func OpenAPIV3(crd *apiextensionsv1.CustomResourceDefinition, version string) (*spec3.OpenAPI, error) {
	return builder.BuildOpenAPIV3(crd, version, builder.Options{IncludeSelectableFields: true})
}

// MergeOpenAPIV3 merges the documents of several CRDs of one group version.
func MergeOpenAPIV3(specs ...*spec3.OpenAPI) (*spec3.OpenAPI, error) {
	return builder.MergeSpecsV3(specs...)
}

// OpenAPIV2 builds the OpenAPI v2 (swagger) part of crd, all its served versions, for
// /openapi/v2. Defaults are left out, as kube-apiserver does so that CRDs merge cleanly with
// the built-in types' spec.
func OpenAPIV2(crd *apiextensionsv1.CustomResourceDefinition) (*spec.Swagger, error) {
	merged := &spec.Swagger{}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		s, err := builder.BuildOpenAPIV2(crd, v.Name, builder.Options{V2: true, IncludeSelectableFields: true})
		if err != nil {
			return nil, err
		}
		s.Definitions = handler.PruneDefaults(s.Definitions)
		if merged, err = builder.MergeSpecs(merged, s); err != nil {
			return nil, err
		}
	}
	return merged, nil
}

// MergeOpenAPIV2 adds the CRDs' specs (from OpenAPIV2) to static, the built-in types' spec,
// which wins any conflict. Inputs are not changed.
func MergeOpenAPIV2(static *spec.Swagger, crdSpecs ...*spec.Swagger) (*spec.Swagger, error) {
	return builder.MergeSpecs(static, crdSpecs...)
}
