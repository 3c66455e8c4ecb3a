package endpoints

import (
	"net/http"
)

// serveComputed answers a type whose objects are computed at each read
// (resource.Resource.Computed): get and list, which the registry answers, as kube-apiserver's
// componentstatuses storage serves them; any other method is not allowed, and there is no watch.
func (s *Server) serveComputed(w http.ResponseWriter, r *http.Request, req *request) {
	switch {
	case r.Method != http.MethodGet || IsWatch(r):
		s.writeError(w, r, errMethodNotAllowed(r.Method))
	case req.subresource != "":
		s.writeError(w, r, errNotFoundPath())
	case req.name != "":
		s.handle(w, r, req, s.serveGet)
	default:
		s.handle(w, r, req, s.serveList)
	}
}
