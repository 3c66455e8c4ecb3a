package endpoints

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sqlkube/sqlkube/server/auditlog"
	"github.com/sqlkube/sqlkube/server/endpoints/filters"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// errNotFoundPath is kube-apiserver's answer for a path that names no served resource: the end
// of its handler chain answers with net/http's plain-text 404, not a Status (clients make the
// Status "the server could not find the requested resource" of it themselves).
func errNotFoundPath() error {
	return pathNotFound{apierrors.NewGenericServerResponse(http.StatusNotFound, "", schema.GroupResource{}, "", "", 0, false)}
}

// pathNotFound is answered with http.NotFound by writeError.
type pathNotFound struct{ *apierrors.StatusError }

// errMethodNotAllowed is kube-apiserver's answer for a verb a path does not support.
func errMethodNotAllowed(method string) error {
	return apierrors.NewGenericServerResponse(http.StatusMethodNotAllowed, strings.ToLower(method), schema.GroupResource{}, "", "", 0, false)
}

// errNotAcceptable answers an Accept header no served media type satisfies.
func errNotAcceptable() error { return notAcceptable(listedMediaTypes) }

// errNotAcceptableStream answers a watch whose Accept names a format that has no stream framing
// (YAML): kube-apiserver lists the formats that have one.
func errNotAcceptableStream() error { return notAcceptable(listedStreamMediaTypes) }

func notAcceptable(mediaTypes []string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotAcceptable,
		Reason:  metav1.StatusReasonNotAcceptable,
		Message: "only the following media types are accepted: " + strings.Join(mediaTypes, ", "),
	}}
}

// errDatabaseFault is what a client learns of a failure of the database: its text (SQL, the
// driver's words) goes to the server's log only.
var errDatabaseFault = errors.New("the database failed to serve the request; the server's log has the details")

// apiStatus is err as the Status kube-apiserver would answer; anything that is not already an API
// error is an internal error.
func apiStatus(err error) metav1.Status {
	var status apierrors.APIStatus
	switch {
	case errors.As(err, &status):
	case errors.As(err, new(*sqlstore.DatabaseError)):
		status = apierrors.NewInternalError(errDatabaseFault)
	default:
		status = apierrors.NewInternalError(err)
	}
	st := status.Status()
	st.Kind, st.APIVersion = "Status", "v1"
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	return st
}

// writeError answers err as a Status in the client's preferred format (statusOutput): protobuf
// only for a resource request.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.As(err, new(pathNotFound)) {
		http.NotFound(w, r)
		return
	}
	st := apiStatus(err)
	if st.Code >= 500 && !filters.ClientGone(r) {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(st.Details.RetryAfterSeconds))
	}
	body, err := s.statusBody(w, r, st)
	if err != nil {
		body, _ = json.Marshal(st)
		w.Header().Set("Content-Type", mediaTypeJSON)
	}
	w.WriteHeader(int(st.Code))
	_, _ = w.Write(body)
}

// statusBody encodes a Status in the client's preferred format, recorded as the audit event's
// responseStatus. A client whose Accept header names no format for it gets kube-apiserver's raw
// answer: indented JSON, which kube's audit does not record beyond its code.
func (s *Server) statusBody(w http.ResponseWriter, r *http.Request, st metav1.Status) ([]byte, error) {
	out, ok := statusOutput(r, isResourceRequest(r))
	w.Header().Set("Content-Type", out.contentType())
	if !ok {
		return json.MarshalIndent(st, "", "  ")
	}
	auditlog.Response(r.Context(), &st, nil)
	body, _ := json.Marshal(st)
	return inEncoding(out, body)
}
