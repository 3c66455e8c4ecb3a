package endpoints

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sqlkube/sqlkube/server/auditlog"
	"github.com/sqlkube/sqlkube/server/endpoints/wire"
	"github.com/sqlkube/sqlkube/server/registry/decode"
	"github.com/sqlkube/sqlkube/server/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// presizedBodyBytes bounds the buffer readBody allocates from Content-Length alone: a larger body
// grows it as it arrives, so that a client claiming a large body does not get memory for nothing.
const presizedBodyBytes = 64 << 10

// readBody reads a request body of at most limit bytes; a longer one is 413, as kube-apiserver
// answers it. The buffer is sized by Content-Length, when sent, so that it is allocated once.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	size := min(max(r.ContentLength, 0), limit, presizedBodyBytes) + bytes.MinRead // room to read EOF
	body := bytes.NewBuffer(make([]byte, 0, size))
	if _, err := body.ReadFrom(io.LimitReader(r.Body, limit+1)); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to read request body: %v", err))
	}
	if int64(body.Len()) > limit {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", limit))
	}
	return body.Bytes(), nil
}

// readRequestBody reads a request body in the format its Content-Type names, as JSON or YAML:
// protobuf bodies (accepted where protobufOK, for the built-in types) are transcoded to JSON.
func (s *Server) readRequestBody(r *http.Request, protobufOK bool) (body []byte, isYAML bool, err error) {
	format, err := requestBodyFormat(r, protobufOK)
	if err != nil {
		return nil, false, err
	}
	if body, err = readBody(r, s.opts.MaxRequestBodyBytes); err != nil {
		return nil, false, err
	}
	if format == bodyProtobuf && len(body) > 0 {
		body, err = wire.ProtobufToJSON(body)
	}
	return body, format == bodyYAML, err
}

// decodeObject reads the request body as an object of res's kind, in JSON, YAML or (built-ins)
// protobuf by its Content-Type. A missing kind or apiVersion is filled from the path, as
// kube-apiserver defaults them; a different one is 400. The body's strict errors (duplicate
// fields, fields the type does not know) are handled as fieldValidation says: returned as
// warnings (Warn, the default), ignored, or 400 (Strict).
func (s *Server) decodeObject(r *http.Request, res *resource.Resource, fieldValidation string) (*unstructured.Unstructured, []string, error) {
	body, isYAML, err := s.readRequestBody(r, res.CRDName == "")
	if err != nil {
		return nil, nil, err
	}
	obj, warnings, err := decode.Object(res, body, isYAML, fieldValidation)
	if err == nil {
		auditlog.RequestObject(r.Context(), obj)
	}
	return obj, warnings, err
}

// addWarnings sends warnings as kube-apiserver does, in Warning headers with code 299.
func addWarnings(w http.ResponseWriter, warnings []string) {
	for _, text := range warnings {
		w.Header().Add("Warning", "299 - "+strconv.Quote(text))
	}
}
