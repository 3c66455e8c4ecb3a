package discovery

import (
	"strings"

	restful "github.com/emicklei/go-restful/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/endpoints/discovery"
	"k8s.io/apiserver/pkg/endpoints/discovery/aggregated"
	"k8s.io/apiserver/pkg/server/routes"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/common/restfuladapter"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	kuberoutes "k8s.io/kubernetes/pkg/routes"

	"github.com/sqlkube/sqlkube/server/kubeopenapi"
)

// nonResourceOpenAPI are kube-apiserver's OpenAPI v3 documents of its endpoints that serve no
// resources, by path: "api", "apis", "apis/GROUP" of each built-in group, "version" and, when
// the server issues ServiceAccount tokens, the issuer's discovery documents. kube-apiserver
// builds one document from the routes of each of its go-restful web services; these are the
// web services kube's own code makes for those endpoints (their handlers are never called).
func nonResourceOpenAPI(builtins *common.OpenAPIV3Config, groups []discoveryGroup, issuerDiscovery bool) (map[string]*spec3.OpenAPI, error) {
	docs := map[string]*spec3.OpenAPI{}
	for _, ws := range nonResourceWebServices(groups, issuerDiscovery) {
		// A config per document: the builder writes its defaults into it.
		doc, err := builder3.BuildOpenAPISpecFromRoutes(restfuladapter.AdaptWebServices([]*restful.WebService{ws}), kubeopenapi.RoutesV3Config(builtins))
		if err != nil {
			return nil, err
		}
		docs[strings.TrimPrefix(ws.RootPath(), "/")] = doc
	}
	return docs, nil
}

// nonResourceWebServices are the web services kube-apiserver (and the apiextensions and
// aggregator servers it chains) registers for /api, /apis, each group's /apis/GROUP, /version
// and, with issuerDiscovery, the ServiceAccount issuer's discovery documents.
func nonResourceWebServices(groups []discoveryGroup, issuerDiscovery bool) []*restful.WebService {
	c := restful.NewContainer()
	discoveryRoots := aggregated.WrapAggregatedDiscoveryToHandler(nil, nil, nil)
	c.Add(discoveryRoots.GenerateWebService("/api", metav1.APIVersions{}))
	c.Add(discoveryRoots.GenerateWebService("/apis", metav1.APIGroupList{}))
	for _, g := range groups {
		if g.name != "" && isBuiltinGroup(g) {
			c.Add(discovery.NewAPIGroupHandler(legacyscheme.Codecs, metav1.APIGroup{Name: g.name}).WebService())
		}
	}
	routes.Version{Version: &Version}.Install(c)
	if issuerDiscovery {
		kuberoutes.NewOpenIDMetadataServer(nil).Install(c)
	}
	return c.RegisteredWebServices()
}

// isBuiltinGroup is true for a group of built-in types: a CRD group's /apis/GROUP is served by
// apiextensions-apiserver's own handler, which has no OpenAPI document.
func isBuiltinGroup(g discoveryGroup) bool {
	for _, v := range g.versions {
		for _, r := range v.resources {
			if r.CRDName == "" {
				return true
			}
		}
	}
	return false
}
