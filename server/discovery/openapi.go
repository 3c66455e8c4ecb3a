package discovery

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/sqlkube/sqlkube/server/crdschema"
	"github.com/sqlkube/sqlkube/server/kubeopenapi"
	"github.com/sqlkube/sqlkube/server/resource"
)

// OpenAPIDocs are the encoded OpenAPI v3 documents: the root, and the others by path: each
// group version's ("api/v1", "apis/GROUP/VERSION") and kube-apiserver's documents of the
// endpoints that serve no resources ("api", "apis", "version"... see nonResourceOpenAPI).
type OpenAPIDocs struct {
	Root   Doc
	ByPath map[string]Doc
}

// lazyOpenAPI builds the OpenAPI documents of one set of served resources on first use:
// building CRD documents is costly, and most clients never ask.
type lazyOpenAPI struct {
	once            sync.Once
	resources       []discoveryGroup
	issuerDiscovery bool
	docs            *OpenAPIDocs
	err             error
}

// OpenAPI returns the OpenAPI v3 documents, built on first use.
func (d *Docs) OpenAPI() (*OpenAPIDocs, error) {
	l := d.openapi
	l.once.Do(func() { l.docs, l.err = buildOpenAPI(l.resources, l.issuerDiscovery) })
	return l.docs, l.err
}

// buildOpenAPI builds every document and the root that lists them, each with the hash of its
// content as clients find it there.
func buildOpenAPI(groups []discoveryGroup, issuerDiscovery bool) (*OpenAPIDocs, error) {
	builtins := kubeopenapi.V3Config(openAPIVersion)
	specs, err := nonResourceOpenAPI(builtins, groups, issuerDiscovery)
	if err != nil {
		return nil, fmt.Errorf("building the OpenAPI documents of the discovery endpoints: %w", err)
	}
	for _, g := range groups {
		for _, v := range g.versions {
			spec, err := groupVersionOpenAPI(builtins, v)
			if err != nil {
				return nil, fmt.Errorf("building the OpenAPI document of %s: %w", resource.GroupVersion(g.name, v.version), err)
			}
			specs[strings.TrimPrefix(versionPath(g.name, v.version), "/")] = spec
		}
	}
	docs := &OpenAPIDocs{ByPath: map[string]Doc{}}
	root := handler3.OpenAPIV3Discovery{Paths: map[string]handler3.OpenAPIV3DiscoveryGroupVersion{}}
	for path, spec := range specs {
		doc := encodeDoc(spec)
		docs.ByPath[path] = doc
		root.Paths[path] = handler3.OpenAPIV3DiscoveryGroupVersion{
			ServerRelativeURL: "/openapi/v3/" + path + "?hash=" + strings.Trim(doc.ETag, `"`),
		}
	}
	docs.Root = encodeDoc(root)
	return docs, nil
}

// groupVersionOpenAPI is one group version's document: the CRDs' documents merged, plus the
// built-ins' PATCH operations and their kinds' schemas, from kube's definitions (builtins).
func groupVersionOpenAPI(builtins *common.OpenAPIV3Config, v discoveryVersion) (*spec3.OpenAPI, error) {
	var crdSpecs []*spec3.OpenAPI
	paths := map[string]*spec3.Path{}
	var builtinKinds []string
	for _, r := range v.resources {
		if r.Definition == nil {
			if slices.Contains(r.Verbs, "patch") { // not the reviews
				paths[objectPath(r)] = &spec3.Path{PathProps: spec3.PathProps{Patch: patchOperation(r)}}
			}
			builtinKinds = append(builtinKinds, kubeopenapi.ModelName(r.GoType()))
			continue
		}
		s, err := crdschema.OpenAPIV3(r.Definition, r.Version)
		if err != nil {
			return nil, err
		}
		crdSpecs = append(crdSpecs, s)
	}
	schemas, err := builder3.BuildOpenAPIDefinitionsForResources(builtins, builtinKinds...)
	if err != nil {
		return nil, err
	}
	info := builtins.Info
	if len(crdSpecs) > 0 {
		merged, err := crdschema.MergeOpenAPIV3(crdSpecs...)
		if err != nil {
			return nil, err
		}
		maps.Copy(paths, merged.Paths.Paths)
		if merged.Components != nil {
			maps.Copy(schemas, merged.Components.Schemas)
		}
		if len(builtinKinds) == 0 {
			// A group version of CRDs only is apiextensions-apiserver's document, with its info.
			info = merged.Info
		}
	}
	return &spec3.OpenAPI{
		Version:    "3.0.0",
		Info:       info,
		Paths:      &spec3.Paths{Paths: paths},
		Components: &spec3.Components{Schemas: schemas},
	}, nil
}

// objectPath is where one object of r is read and written.
func objectPath(r *resource.Resource) string {
	prefix := versionPath(r.Group, r.Version)
	if r.Namespaced {
		prefix += "/namespaces/{namespace}"
	}
	return prefix + "/" + r.Name + "/{name}"
}

// patchOperation describes the PATCH of one built-in object: its kind and the query
// parameters it takes.
func patchOperation(r *resource.Resource) *spec3.Operation {
	op := &spec3.Operation{}
	op.AddExtension("x-kubernetes-action", "patch")
	op.AddExtension("x-kubernetes-group-version-kind", map[string]string{"group": r.Group, "version": r.Version, "kind": r.Kind})
	for _, p := range []struct{ name, typ string }{
		{"dryRun", "string"}, {"fieldManager", "string"}, {"fieldValidation", "string"}, {"force", "boolean"},
	} {
		op.Parameters = append(op.Parameters, &spec3.Parameter{ParameterProps: spec3.ParameterProps{
			Name: p.name, In: "query", Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{p.typ}}},
		}})
	}
	return op
}
