// Package kubeopenapi describes the built-in types as kube-apiserver's OpenAPI does: from kube's
// generated definitions (k8s.io/kubernetes/pkg/generated/openapi, apiextensions' types
// included), named and marked with their group-version-kinds by kube's definition namer over the
// schemes of every built-in group, enums pruned unless the OpenAPIEnums feature is on, as
// kube-apiserver's builders (kube-openapi's builder and builder3) publish them.
//
// The definitions of every built-in type take several megabytes: each config computes them
// anew, so that they are garbage once the documents or the type converter they serve are built.
package kubeopenapi

import (
	"net/http"
	"reflect"
	"sync"

	apiextensionsscheme "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/scheme"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	utilopenapi "k8s.io/apiserver/pkg/util/openapi"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	aggregatorscheme "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/scheme"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
	generatedopenapi "k8s.io/kubernetes/pkg/generated/openapi"
)

// schemes hold every built-in kind, as kube-apiserver's (legacyscheme's, apiextensions' and
// its aggregator's) versioned kinds.
var schemes = []*runtime.Scheme{clientgoscheme.Scheme, apiextensionsscheme.Scheme, aggregatorscheme.Scheme}

// namer names definitions as kube-apiserver does and marks each kind's with its
// group-version-kinds.
var namer = sync.OnceValue(func() *openapinamer.DefinitionNamer {
	return openapinamer.NewDefinitionNamer(schemes...)
})

// getDefinitions are kube-apiserver's definitions, as it wraps them.
var getDefinitions = utilopenapi.GetOpenAPIDefinitionsWithoutDisabledFeatures(generatedopenapi.GetOpenAPIDefinitions)

// ModelName is the name of t's definition ("io.k8s.api.apps.v1.Deployment").
func ModelName(t reflect.Type) string {
	return util.GetCanonicalTypeName(reflect.New(t).Interface())
}

// V3Config is kube-apiserver's OpenAPI v3 config, titled "Kubernetes", with the definitions
// computed now: give it to builder3.BuildOpenAPIDefinitionsForResources.
func V3Config(version string) *common.OpenAPIV3Config {
	config := &common.OpenAPIV3Config{
		Info:                           &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: version}},
		GetDefinitionName:              namer().GetDefinitionName,
		GetOperationIDAndTagsFromRoute: operationName,
	}
	config.Definitions = getDefinitions(func(name string) spec.Ref {
		defName, _ := config.GetDefinitionName(name)
		return spec.MustCreateRef("#/components/schemas/" + common.EscapeJsonPointer(defName))
	})
	return config
}

// RoutesV3Config is kube-apiserver's OpenAPI v3 config for the documents it builds from its
// go-restful routes (builder3.BuildOpenAPISpecFromRoutes), over base's info and definitions:
// what genericapiserver.DefaultOpenAPIV3Config sets for routes (kube's operation ids and tags,
// the default response; that package is not imported for three values), the BearerToken
// scheme kube-apiserver's token authenticators add, and what its config completion derives
// from it (every operation's security, and a 401 response).
func RoutesV3Config(base *common.OpenAPIV3Config) *common.OpenAPIV3Config {
	return &common.OpenAPIV3Config{
		Info:                  base.Info,
		IgnorePrefixes:        []string{},
		DefaultResponse:       &spec3.Response{ResponseProps: spec3.ResponseProps{Description: "Default Response."}},
		GetOperationIDAndTags: openapinamer.GetOperationIDAndTags,
		GetDefinitionName:     base.GetDefinitionName,
		Definitions:           base.Definitions,
		SecuritySchemes: spec3.SecuritySchemes{"BearerToken": {SecuritySchemeProps: spec3.SecuritySchemeProps{
			Type: "apiKey", Name: "authorization", In: "header", Description: "Bearer Token authentication",
		}}},
		DefaultSecurity: []map[string][]string{{"BearerToken": {}}},
		CommonResponses: map[int]*spec3.Response{
			http.StatusUnauthorized: {ResponseProps: spec3.ResponseProps{Description: "Unauthorized"}},
		},
	}
}

// V2Config is kube-apiserver's OpenAPI v2 config, titled "Kubernetes": give it to
// builder.BuildOpenAPIDefinitionsForResources, which computes the definitions.
func V2Config(version string) *common.Config {
	return &common.Config{
		Info:                           &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: version}},
		GetDefinitionName:              namer().GetDefinitionName,
		GetDefinitions:                 getDefinitions,
		GetOperationIDAndTagsFromRoute: operationName,
	}
}

// operationName is set so that the builders, which set a default when there is none, never
// write to a config (no routes are built here).
func operationName(r common.Route) (string, []string, error) { return r.OperationName(), nil, nil }

// TypeConverter reads every built-in kind with kube's definitions, as kube-apiserver's field
// managers do (managedfields.NewTypeConverter over its OpenAPI v3 models). Built once.
var TypeConverter = sync.OnceValues(func() (managedfields.TypeConverter, error) {
	config := V3Config("")
	var names []string
	seen := map[string]bool{}
	for _, s := range schemes {
		for gvk := range s.AllKnownTypes() {
			name, err := s.ToOpenAPIDefinitionName(gvk)
			if _, defined := config.Definitions[name]; err != nil || !defined || seen[name] {
				continue // internal and option types, which have no definition
			}
			seen[name] = true
			names = append(names, name)
		}
	}
	schemas, err := builder3.BuildOpenAPIDefinitionsForResources(config, names...)
	if err != nil {
		return nil, err
	}
	return managedfields.NewTypeConverter(schemas, false)
})
