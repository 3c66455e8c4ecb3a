package endpoints

import (
	"net/http"

	"github.com/sqlkube/sqlkube/server/auditlog"
	"github.com/sqlkube/sqlkube/server/registry/scales"
)

// dispatchScale serves the /scale subresource of a custom resource whose CRD declares one.
func (s *Server) dispatchScale(w http.ResponseWriter, r *http.Request, req *request) {
	switch r.Method {
	case http.MethodGet:
		s.handle(w, r, req, s.serveGetScale)
	case http.MethodPut:
		s.handle(w, r, req, s.serveUpdateScale)
	case http.MethodPatch:
		s.handle(w, r, req, s.servePatchScale)
	default:
		s.methodNotSupported(w, r, req)
	}
}

func (s *Server) serveGetScale(w http.ResponseWriter, r *http.Request, req *request) error {
	out, err := negotiateOutput(r, req, false)
	if err != nil {
		return err
	}
	scale, err := s.api.Registry.GetScale(r.Context(), req.ref(), getOptions(r))
	if err != nil {
		return err
	}
	return writeJSON(w, r, out, http.StatusOK, scale)
}

// serveUpdateScale answers PUT on /scale: the body's spec.replicas is written to the object.
func (s *Server) serveUpdateScale(w http.ResponseWriter, r *http.Request, req *request) error {
	out, err := negotiateOutput(r, req, false)
	if err != nil {
		return err
	}
	opts, err := parseUpdateOptions(r)
	if err != nil {
		return err
	}
	// autoscaling/v1 Scale is a built-in type: client-go's typed UpdateScale may send it in
	// protobuf, for a custom resource's /scale too, which kube decodes with its scale scheme.
	body, _, err := s.readRequestBody(r, true)
	if err != nil {
		return err
	}
	auditlog.RequestBody(r.Context(), body)
	scale, warnings, err := scales.DecodeBody(body, opts.FieldValidation)
	if err != nil {
		return err
	}
	addWarnings(w, warnings)
	opts.FieldManager = req.manager
	written, err := s.api.Registry.UpdateScale(r.Context(), req.ref(), scale, opts)
	if err != nil {
		return err
	}
	return writeJSON(w, r, out, http.StatusOK, written)
}

// servePatchScale answers PATCH on /scale: the patch applies to the object's current Scale.
func (s *Server) servePatchScale(w http.ResponseWriter, r *http.Request, req *request) error {
	p, out, err := s.readPatch(r, req)
	if err != nil {
		return err
	}
	written, warnings, err := s.api.Registry.PatchScale(r.Context(), req.ref(), p.patchType, p.body, p.opts)
	addWarnings(w, warnings)
	if err != nil {
		return err
	}
	return writeJSON(w, r, out, http.StatusOK, written)
}
