package discovery

import (
	"fmt"
	"net/http"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/sqlkube/sqlkube/server/crdschema"
	"github.com/sqlkube/sqlkube/server/kubeopenapi"
	"github.com/sqlkube/sqlkube/server/resource"
)

// lazyOpenAPIV2 builds the v2 document of one set of served resources on first use, as
// lazyOpenAPI does for v3. Its tag, new for every set, tells kube-openapi's caches when to
// encode it again.
type lazyOpenAPIV2 struct {
	once   sync.Once
	groups []discoveryGroup
	spec   *spec.Swagger
	tag    string
	err    error
}

// OpenAPIV2 returns the swagger document, built on first use, and its tag, new for every set of
// served resources.
func (d *Docs) OpenAPIV2() (*spec.Swagger, string, error) {
	l := d.openAPIV2
	l.once.Do(func() {
		l.spec, l.err = buildOpenAPIV2(l.groups)
		l.tag = string(uuid.NewUUID())
	})
	return l.spec, l.tag, l.err
}

// buildOpenAPIV2 merges the built-ins' definitions, from kube's, and each CRD's document (all
// its served versions, once per CRD).
func buildOpenAPIV2(groups []discoveryGroup) (*spec.Swagger, error) {
	var builtinKinds []string
	builtinPaths := map[string]spec.PathItem{}
	var crdSpecs []*spec.Swagger
	seen := map[string]bool{}
	for _, g := range groups {
		for _, v := range g.versions {
			for _, r := range v.resources {
				switch {
				case r.Definition == nil:
					builtinKinds = append(builtinKinds, kubeopenapi.ModelName(r.GoType()))
					if slices.Contains(r.Verbs, "patch") { // not the reviews
						builtinPaths[objectPath(r)] = patchPathV2(r)
					}
				case !seen[r.CRDName]:
					seen[r.CRDName] = true
					s, err := crdschema.OpenAPIV2(r.Definition)
					if err != nil {
						return nil, fmt.Errorf("building the OpenAPI v2 document of %s: %w", r.CRDName, err)
					}
					crdSpecs = append(crdSpecs, s)
				}
			}
		}
	}
	builtins, err := builder.BuildOpenAPIDefinitionsForResources(kubeopenapi.V2Config(kubernetesVersion), builtinKinds...)
	if err != nil {
		return nil, fmt.Errorf("building the OpenAPI v2 document of the built-in types: %w", err)
	}
	builtins.Paths = &spec.Paths{Paths: builtinPaths}
	return crdschema.MergeOpenAPIV2(builtins, crdSpecs...)
}

// patchPathV2 is the v2 form of a built-in's PATCH operation in the v3 documents (see
// patchOperation), which tells older clients the server validates fields itself. Swagger
// requires its responses: the object patched.
func patchPathV2(r *resource.Resource) spec.PathItem {
	v3 := patchOperation(r)
	patched := spec.Response{ResponseProps: spec.ResponseProps{
		Description: "OK", Schema: spec.RefSchema("#/definitions/" + kubeopenapi.ModelName(r.GoType())),
	}}
	op := &spec.Operation{VendorExtensible: v3.VendorExtensible, OperationProps: spec.OperationProps{
		Responses: &spec.Responses{ResponsesProps: spec.ResponsesProps{StatusCodeResponses: map[int]spec.Response{http.StatusOK: patched}}},
	}}
	for _, p := range v3.Parameters {
		op.Parameters = append(op.Parameters, spec.Parameter{
			ParamProps:   spec.ParamProps{Name: p.Name, In: p.In},
			SimpleSchema: spec.SimpleSchema{Type: p.Schema.Type[0]},
		})
	}
	return spec.PathItem{PathItemProps: spec.PathItemProps{Patch: op}}
}
