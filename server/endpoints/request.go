package endpoints

import (
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gorilla/mux"
	"github.com/sqlkube/sqlkube/server/endpoints/filters"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/audit"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// request is an API request resolved against the registry: which resource, where, and which
// object. Handlers for every verb, including watch, start from it.
type request struct {
	res *resource.Resource
	gr  schema.GroupResource
	// namespace is the request's namespace: from the path for namespaced resources, empty for
	// cluster-scoped ones and for lists across all namespaces.
	namespace   string
	name        string
	subresource string
	// legacyWatch is set for the deprecated /watch/ paths.
	legacyWatch bool
	// manager is who a write is recorded for in managedFields: the fieldManager parameter, or
	// the client's name from its User-Agent.
	manager string
}

// ref is what the request is about, for the registry.
func (req *request) ref() registry.Ref {
	return registry.Ref{Resource: req.res, Namespace: req.namespace, Name: req.name, Subresource: req.subresource}
}

// namespaceSubresources are the subresources of a namespace, which kube-apiserver does not read
// as a resource inside that namespace.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// serveCoreAPI serves /api/v1/...
func (s *Server) serveCoreAPI(w http.ResponseWriter, r *http.Request) {
	s.serveAPI(w, r, "", "v1", strings.TrimPrefix(r.URL.Path, "/api/v1/"))
}

// serveGroupAPI serves /apis/GROUP/VERSION/...
func (s *Server) serveGroupAPI(w http.ResponseWriter, r *http.Request) {
	vars := mux.Vars(r)
	group, version := vars["group"], vars["version"]
	s.serveAPI(w, r, group, version, strings.TrimPrefix(r.URL.Path, "/apis/"+group+"/"+version+"/"))
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, group, version, rest string) {
	req, err := s.resolve(group, version, rest)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req.manager = managerOrUserAgent(r.URL.Query().Get("fieldManager"), r.UserAgent())
	if req.res.DeprecationWarning != "" {
		addWarnings(w, []string{req.res.DeprecationWarning})
	}
	s.dispatch(w, r, req)
	if req.res.DeprecationWarning != "" {
		// kube-apiserver's request metrics mark a deprecated version's requests in the audit
		// event once the handler is done (so a watch's ResponseStarted event lacks it).
		// removed-release is not written: no version sqlkube serves has a removal release.
		audit.AddAuditAnnotation(r.Context(), deprecatedAnnotation, "true")
	}
}

// deprecatedAnnotation is kube-apiserver's audit annotation on requests to a deprecated version.
const deprecatedAnnotation = "k8s.io/deprecated"

// resolve reads the path after the group version the way kube-apiserver's request-info resolver
// does: [watch/][namespaces/NS/]RESOURCE[/NAME[/SUBRESOURCE]], where namespaces/NAME/status is
// the namespace's own subresource.
func (s *Server) resolve(group, version, rest string) (*request, error) {
	parts := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	req := &request{}
	if parts[0] == "watch" {
		req.legacyWatch, parts = true, parts[1:]
	}
	if len(parts) > 2 && parts[0] == "namespaces" && !namespaceSubresources[parts[2]] {
		req.namespace, parts = parts[1], parts[2:]
	}
	if len(parts) == 0 || containsEmpty(parts) {
		return nil, errNotFoundPath()
	}
	res, ok := s.api.Catalog.Lookup(group, version, parts[0])
	if !ok {
		return nil, errNotFoundPath()
	}
	if req.namespace != "" && !res.Namespaced {
		return nil, errNotFoundPath()
	}
	if len(parts) > 3 {
		proxied := parts[2] == "proxy" && res.Subresource("proxy") != nil
		if res.CRDName == "" && !proxied {
			return nil, errNotFoundPath()
		}
		// apiextensions-apiserver reads only the subresource of a deeper path, as the
		// request-info resolver does; a pod's proxy takes the rest as the proxied path.
		parts = parts[:3]
	}
	req.res, req.gr = res, schema.GroupResource{Group: res.Group, Resource: res.Name}
	if len(parts) > 1 {
		req.name = parts[1]
	}
	if len(parts) > 2 {
		req.subresource = parts[2] // a proxy's path after it is the proxied path
	}
	if res.Namespaced && req.namespace == "" && req.name != "" {
		// A namespaced object is only reachable through its namespace.
		return nil, errNotFoundPath()
	}
	return req, nil
}

func containsEmpty(parts []string) bool {
	for _, p := range parts {
		if p == "" {
			return true
		}
	}
	return false
}

// verbHandler serves one verb on a resolved request; an error it returns, before it has written
// anything, is the answer.
type verbHandler func(w http.ResponseWriter, r *http.Request, req *request) error

// handle runs h and answers its error.
func (s *Server) handle(w http.ResponseWriter, r *http.Request, req *request, h verbHandler) {
	if err := h(w, r, req); err != nil {
		s.writeError(w, r, err)
	}
}

// dispatch routes a resolved request to the handler for its verb.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, req *request) {
	switch {
	case req.res.Computed != nil:
		s.serveComputed(w, r, req)
	case req.res.Creater != nil:
		s.dispatchCreateOnly(w, r, req)
	case req.legacyWatch:
		if r.Method != http.MethodGet {
			s.writeError(w, r, errMethodNotAllowed(r.Method))
			return
		}
		s.serveWatch(w, r, req)
	case req.name == "":
		s.dispatchCollection(w, r, req)
	case req.subresource == "":
		s.dispatchObject(w, r, req)
	case req.subresource == "status" && req.res.Status:
		s.dispatchStatus(w, r, req)
	case req.subresource == "finalize" && req.res.Finalize:
		s.dispatchFinalize(w, r, req)
	case req.subresource == "scale" && req.res.Scale != nil:
		s.dispatchScale(w, r, req)
	default:
		s.dispatchTypeSubresource(w, r, req)
	}
}

// dispatchTypeSubresource serves one of the type's own subresources (resource.Subresource): an
// update of the object with the subresource's rules, or a handler the type registered.
func (s *Server) dispatchTypeSubresource(w http.ResponseWriter, r *http.Request, req *request) {
	sub := req.res.Subresource(req.subresource)
	switch {
	case sub != nil && sub.Strategy != nil:
		s.dispatchStatus(w, r, req)
	case sub != nil && (sub.Creater != nil || sub.Connecter != nil):
		s.dispatchHandled(w, r, req, sub)
	case req.res.CRDName != "":
		// apiextensions-apiserver names the object in its 404 for an unknown subresource.
		s.writeError(w, r, apierrors.NewNotFound(req.gr, req.name))
	default:
		s.writeError(w, r, errNotFoundPath())
	}
}

func (s *Server) dispatchCollection(w http.ResponseWriter, r *http.Request, req *request) {
	if r.Method != http.MethodGet && req.res.CRDName != "" && req.res.Namespaced && req.namespace == "" {
		// apiextensions-apiserver serves only lists and watches across all namespaces; it hands
		// anything else on to the server behind it, which does not know the path.
		s.writeError(w, r, errNotFoundPath())
		return
	}
	switch {
	case r.Method == http.MethodGet && IsWatch(r):
		s.serveWatch(w, r, req)
	case r.Method == http.MethodGet:
		s.handle(w, r, req, s.serveList)
	case r.Method == http.MethodPost && (req.namespace != "" || !req.res.Namespaced):
		s.handle(w, r, req, s.serveCreate)
	case r.Method == http.MethodDelete && (req.namespace != "" || !req.res.Namespaced) && allowsDeleteCollection(req.res):
		s.handle(w, r, req, s.serveDeleteCollection)
	case (r.Method == http.MethodPut || r.Method == http.MethodPatch) && req.res.CRDName != "":
		// apiextensions-apiserver takes these for an update or patch of an object with no name.
		s.writeError(w, r, apierrors.NewBadRequest("name must be provided"))
	default:
		s.methodNotSupported(w, r, req)
	}
}

func (s *Server) dispatchObject(w http.ResponseWriter, r *http.Request, req *request) {
	switch r.Method {
	case http.MethodGet:
		s.handle(w, r, req, s.serveGet)
	case http.MethodPut:
		s.handle(w, r, req, s.serveUpdate)
	case http.MethodPatch:
		s.handle(w, r, req, s.servePatch)
	case http.MethodDelete:
		s.handle(w, r, req, s.serveDelete)
	case http.MethodPost:
		s.postOnObject(w, r, req)
	default:
		s.methodNotSupported(w, r, req)
	}
}

// postOnObject answers a POST to an object's path: apiextensions-apiserver serves it as a create
// in the collection, the name in the path ignored; kube-apiserver's built-ins do not serve it.
func (s *Server) postOnObject(w http.ResponseWriter, r *http.Request, req *request) {
	if req.res.CRDName == "" {
		s.methodNotSupported(w, r, req)
		return
	}
	req.name = ""
	s.handle(w, r, req, s.serveCreate)
}

func (s *Server) dispatchStatus(w http.ResponseWriter, r *http.Request, req *request) {
	switch r.Method {
	case http.MethodGet:
		s.handle(w, r, req, s.serveGet)
	case http.MethodPut:
		s.handle(w, r, req, s.serveUpdate)
	case http.MethodPatch:
		s.handle(w, r, req, s.servePatch)
	default:
		s.methodNotSupported(w, r, req)
	}
}

func (s *Server) dispatchFinalize(w http.ResponseWriter, r *http.Request, req *request) {
	if r.Method != http.MethodPut {
		s.writeError(w, r, errMethodNotAllowed(r.Method))
		return
	}
	s.handle(w, r, req, s.serveUpdate)
}

// methodNotSupported answers a method the path does not serve: as kube-apiserver's generic 405
// for a built-in, and for a custom resource as apiextensions-apiserver does, naming the verb and
// the resource.
func (s *Server) methodNotSupported(w http.ResponseWriter, r *http.Request, req *request) {
	if req.res.CRDName == "" {
		s.writeError(w, r, errMethodNotAllowed(r.Method))
		return
	}
	s.writeError(w, r, apierrors.NewMethodNotSupported(req.gr, requestVerb(r.Method, req.name == "")))
}

// requestVerb is the verb kube-apiserver's request-info resolver gives a method: on a
// collection, GET lists and DELETE deletes the collection; a method it does not know has none.
func requestVerb(method string, collection bool) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		if collection {
			return "list"
		}
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if collection {
			return "deletecollection"
		}
		return "delete"
	}
	return ""
}

// IsWatch reports whether r asks for a watch, as kube-apiserver's request-info resolver (the
// filters' RequestInfoResolver) reads it: a legacy /watch/ path, or a GET of a collection whose
// watch parameter is true by apimachinery's conversion of a query value to a bool (absent, "0"
// and "false" in any letter case are false; anything else is true: "True", the Python client's,
// "yes", and an empty value too; the first of repeated values counts). The routes read the
// request info the filters resolved; what wraps the server (ending watches at shutdown) has it
// resolved here.
func IsWatch(r *http.Request) bool {
	info, resolved := genericrequest.RequestInfoFrom(r.Context())
	if !resolved {
		var err error
		if info, err = filters.RequestInfoResolver.NewRequestInfo(r); err != nil {
			return false
		}
	}
	return info.Verb == "watch"
}
