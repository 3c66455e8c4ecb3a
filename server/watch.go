package server

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// serveWatch is the seam for the watch handler: every watch request (watch=1|true on a collection
// GET, and the legacy /watch/ paths) arrives here, resolved into req. parseListOptions and
// newSelection give it the same query parsing and selectors as a list. Until the watch handler
// lands it answers 405.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request, req *request) {
	s.writeError(w, r, apierrors.NewMethodNotSupported(req.gr, "watch"))
}
