package endpoints

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"

	"github.com/gorilla/mux"
	"github.com/munnerz/goautoneg"
	"github.com/sqlkube/sqlkube/server/discovery"
	"k8s.io/kube-openapi/pkg/cached"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"
)

// mediaTypeAggregatedDiscovery is the aggregated discovery document's media type: kubectl asks
// for it first and recognizes it by the response's Content-Type.
const mediaTypeAggregatedDiscovery = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// routeDiscovery registers the discovery documents kubectl and client-go read before anything
// else: /api, /api/v1, /apis, /apis/GROUP and /apis/GROUP/VERSION (legacy documents, or the
// aggregated apidiscovery.k8s.io/v2 list on /api and /apis when the Accept header asks for it),
// /version, and the OpenAPI v3 documents (see routeOpenAPI). Register it before the resource
// routes.
func (s *Server) routeDiscovery(r *mux.Router) {
	for _, path := range []string{"/api", "/api/v1", "/apis", "/apis/{group}", "/apis/{group}/{version}"} {
		r.Path(path).HandlerFunc(s.onlyGet(s.serveDiscovery))
	}
	r.Path("/version").HandlerFunc(s.onlyGet(s.serveVersion))
	s.routeOpenAPI(r)
}

// onlyGet answers other methods than GET with kube-apiserver's 405 Status.
func (s *Server) onlyGet(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			s.writeError(w, r, errMethodNotAllowed(r.Method))
			return
		}
		next(w, r)
	}
}

// serveDiscovery answers a discovery path from the documents built when the served resources
// last changed.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request) {
	// Only /api and /apis have an aggregated form.
	hasAggregated := r.URL.Path == "/api" || r.URL.Path == "/apis"
	aggregated, asYAML, ok := negotiateDiscovery(r.Header.Get("Accept"), hasAggregated)
	if !ok {
		s.writeError(w, r, errNotAcceptable())
		return
	}
	doc, isAggregated, found := s.api.Discovery.Docs().Find(r, aggregated)
	if !found {
		s.writeError(w, r, errNotFoundPath())
		return
	}
	contentType := mediaTypeJSON
	if isAggregated {
		contentType = mediaTypeAggregatedDiscovery
	}
	if asYAML {
		body, err := yaml.JSONToYAML(doc.Body)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		doc, contentType = discovery.NewDoc(body), mediaTypeYAML
	}
	writeDiscoveryDoc(w, r, doc, contentType)
}

// writeDiscoveryDoc answers with doc, or 304 Not Modified when the client has it already.
func writeDiscoveryDoc(w http.ResponseWriter, r *http.Request, doc discovery.Doc, contentType string) {
	w.Header().Set("Vary", "Accept")
	w.Header().Set("ETag", doc.ETag)
	w.Header().Set("Content-Type", contentType)
	if r.Header.Get("If-None-Match") == doc.ETag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write(doc.Body)
}

// negotiateDiscovery reads the Accept header: the first clause, by preference, that names the
// aggregated list (when the path has one), JSON or YAML decides. ok is false when none does (406).
func negotiateDiscovery(header string, hasAggregated bool) (aggregated, asYAML, ok bool) {
	if header == "" {
		return false, false, true
	}
	for _, c := range goautoneg.ParseAccept(header) {
		switch {
		case c.Type == "*" || (c.Type == "application" && c.SubType == "*"):
			return false, false, true
		case c.Type != "application" || (c.SubType != "json" && c.SubType != "yaml"):
			continue
		case c.Params["as"] == "":
			return false, c.SubType == "yaml", true
		case hasAggregated && c.SubType == "json" && c.Params["g"] == apidiscoveryv2.SchemeGroupVersion.Group &&
			c.Params["v"] == apidiscoveryv2.SchemeGroupVersion.Version && c.Params["as"] == "APIGroupDiscoveryList":
			return true, false, true
		}
	}
	return false, false, false
}

// routeOpenAPI registers the OpenAPI v3 discovery kubectl reads before create and apply: the
// root (/openapi/v3) names one document per group version, and kube-apiserver's documents of
// the endpoints that serve no resources (/api, /version...). A CRD's group version has its full
// document (paths and schemas, as apiextensions-apiserver builds it). A built-in's has its
// schemas (for kubectl explain) and its paths' PATCH operations, which tell kubectl the server
// validates fields itself (fieldValidation); as they accept no strategic merge patch, kubectl
// builds those from its compiled-in types, as it does without OpenAPI.
func (s *Server) routeOpenAPI(r *mux.Router) {
	r.Path("/openapi/v3").HandlerFunc(s.onlyGet(s.serveOpenAPIRoot))
	r.PathPrefix("/openapi/v3/").HandlerFunc(s.onlyGet(s.serveOpenAPIDocument))
	s.routeOpenAPIV2(r)
}

// serveOpenAPIRoot answers as kube-apiserver's aggregator does (its handleDiscovery): with
// net/http's ServeContent and no Content-Type of its own, so the JSON is sniffed as
// "text/plain; charset=utf-8", without an ETag.
func (s *Server) serveOpenAPIRoot(w http.ResponseWriter, r *http.Request) {
	docs, err := s.api.Discovery.Docs().OpenAPI()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	http.ServeContent(w, r, "/openapi/v3", time.Now(), bytes.NewReader(docs.Root.Body))
}

func (s *Server) serveOpenAPIDocument(w http.ResponseWriter, r *http.Request) {
	docs, err := s.api.Discovery.Docs().OpenAPI()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	doc, ok := docs.ByPath[strings.TrimPrefix(r.URL.Path, "/openapi/v3/")]
	if !ok {
		s.writeError(w, r, errNotFoundPath())
		return
	}
	writeDiscoveryDoc(w, r, doc, mediaTypeJSON)
}

// routeOpenAPIV2 serves /openapi/v2, the swagger document older tools still read: the
// built-ins' definitions merged with every CRD's paths and definitions, as kube-apiserver merges
// them. kube-openapi's handler serves it as kube-apiserver does: JSON or protobuf by the Accept
// header, gzip, and an ETag that If-None-Match answers with 304.
func (s *Server) routeOpenAPIV2(r *mux.Router) {
	service := handler.NewOpenAPIServiceLazy(cached.Func(func() (*spec.Swagger, string, error) {
		return s.api.Discovery.Docs().OpenAPIV2()
	}))
	paths := http.NewServeMux()
	service.RegisterOpenAPIVersionedService("/openapi/v2", paths)
	r.Path("/openapi/v2").HandlerFunc(s.onlyGet(paths.ServeHTTP))
}

// serveVersion answers /version.
func (s *Server) serveVersion(w http.ResponseWriter, _ *http.Request) {
	body, _ := json.Marshal(discovery.Version)
	w.Header().Set("Content-Type", mediaTypeJSON)
	_, _ = w.Write(body)
}
