package server

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/sqlkube/sqlkube/server/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// servePatch answers PATCH on an object or its status.
func (s *Server) servePatch(w http.ResponseWriter, r *http.Request, req *request) error {
	p, out, err := s.readPatch(r, req)
	if err != nil {
		return err
	}
	stored, created, warnings, err := s.registry.Patch(r.Context(), req.ref(), p.patchType, p.body, p.opts)
	addWarnings(w, warnings)
	if err != nil {
		return err
	}
	return s.writeObject(w, r, req, out, writtenCode(created), stored.Value)
}

// patchRequest is a PATCH as read from the request: its type, body and options.
type patchRequest struct {
	patchType types.PatchType
	body      []byte
	opts      *metav1.PatchOptions
}

// readPatch reads a PATCH request in kube-apiserver's order: the patch type (415 for one res
// does not accept), the output format, the body, the options, then the body's syntax. A patch
// other than an apply is recorded for the request's field manager (an apply names its own).
func (s *Server) readPatch(r *http.Request, req *request) (*patchRequest, output, error) {
	p := &patchRequest{}
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	accepted := registry.PatchTypes(req.res)
	if req.subresource == "scale" {
		accepted = registry.ScalePatchTypes
	}
	if !slices.Contains(accepted, mediaType) {
		return nil, output{}, registry.UnsupportedMediaType(accepted)
	}
	p.patchType = types.PatchType(mediaType)
	out, err := negotiateOutput(r, false)
	if err != nil {
		return nil, output{}, err
	}
	body, err := readBody(r, s.opts.MaxRequestBodyBytes)
	if err != nil {
		return nil, output{}, err
	}
	p.opts = &metav1.PatchOptions{}
	if err := decodeQuery(r, p.opts); err != nil {
		return nil, output{}, err
	}
	if err := optionsInvalid("PatchOptions", metav1validation.ValidatePatchOptions(p.opts, p.patchType)); err != nil {
		return nil, output{}, err
	}
	if p.patchType != types.ApplyYAMLPatchType {
		p.opts.FieldManager = req.manager
	}
	p.body = body
	auditRequestPatch(r.Context(), body)
	return p, out, checkPatchSyntax(p.patchType, body)
}

// checkPatchSyntax checks a patch body's syntax: apply patches are YAML (JSON being YAML),
// the others JSON.
func checkPatchSyntax(patchType types.PatchType, body []byte) error {
	if patchType == types.ApplyYAMLPatchType {
		if _, err := utilyaml.ToJSON(body); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("error encoding patch: %v", err))
		}
		return nil
	}
	if !json.Valid(body) {
		return apierrors.NewBadRequest("invalid JSON patch")
	}
	return nil
}
