package endpoints

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/endpoints/handlers/finisher"

	"github.com/sqlkube/sqlkube/server/auditlog"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/registry/scales"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/sqlstore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// writeTimeoutUpperBound is how long kube-apiserver's write handlers wait for their work,
// whatever the request's own timeout: past it, or past the request's deadline if sooner, they
// answer 504 even when the work (applying a patch, say) never looks at its context.
const writeTimeoutUpperBound = 34 * time.Second

// servePatch answers PATCH on an object or its status.
func (s *Server) servePatch(w http.ResponseWriter, r *http.Request, req *request) error {
	p, out, err := s.readPatch(r, req)
	if err != nil {
		return err
	}
	result, err := s.patchWithin(r.Context(), req, p)
	if err != nil {
		return err
	}
	addWarnings(w, result.warnings)
	if result.err != nil {
		return result.err
	}
	return s.writeObject(w, r, req, out, writtenCode(result.created), result.stored.Value)
}

// patchResult is what the registry answered a patch.
type patchResult struct {
	stored   sqlstore.Object
	created  bool
	warnings []string
	err      error
}

// patchWithin applies p in a goroutine of its own, as kube-apiserver's finisher does, and waits
// for it at most writeTimeoutUpperBound: then it gives up with kube's 504. The patch's context
// also ends at the request's deadline, so that abandoned work stores nothing; the wait does not,
// since the timeout filter answers then, and two answers racing would reset the stream. The result
// is only read once the goroutine has handed it over.
func (s *Server) patchWithin(ctx context.Context, req *request, p *patchRequest) (*patchResult, error) {
	workCtx, cancelWork := context.WithTimeout(ctx, writeTimeoutUpperBound)
	defer cancelWork()
	waitCtx, cancelWait := context.WithTimeout(context.WithoutCancel(ctx), writeTimeoutUpperBound)
	defer cancelWait()
	result := &patchResult{}
	_, err := finisher.FinishRequest(waitCtx, func() (runtime.Object, error) {
		result.stored, result.created, result.warnings, result.err = s.api.Registry.Patch(workCtx, req.ref(), p.patchType, p.body, p.opts)
		return &metav1.Status{Status: metav1.StatusSuccess}, nil // the patch's own error is in result
	})
	if err != nil {
		return nil, err
	}
	return result, nil
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
		accepted = scales.PatchTypes
	}
	if !slices.Contains(accepted, mediaType) {
		return nil, output{}, storedobj.UnsupportedMediaType(accepted)
	}
	p.patchType = types.PatchType(mediaType)
	out, err := negotiateOutput(r, req, false)
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
	auditlog.RequestPatch(r.Context(), body)
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
