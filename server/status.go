package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"
	"sigs.k8s.io/yaml"

	"github.com/sqlkube/sqlkube/sqlstore"
)

// conflictMessage is kube-apiserver's wording for a stale resourceVersion.
const conflictMessage = "the object has been modified; please apply your changes to the latest version and try again"

// storageError turns a storage error about the object gr/name into the API error
// kube-apiserver answers in the same situation.
func storageError(err error, gr schema.GroupResource, name string) error {
	var compacted *sqlstore.CompactedError
	var future *sqlstore.FutureRevisionError
	switch {
	case errors.Is(err, sqlstore.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, sqlstore.ErrExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, sqlstore.ErrConflict):
		return apierrors.NewConflict(gr, name, errors.New(conflictMessage))
	case errors.As(err, &compacted):
		return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", compacted.Requested, compacted.Compacted))
	case errors.As(err, &future):
		return storage.NewTooLargeResourceVersionError(uint64(future.Requested), uint64(future.Current), 1)
	case errors.Is(err, sqlstore.ErrUnavailable), errors.Is(err, sqlstore.ErrClosed):
		return apierrors.NewServiceUnavailable(err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError("request did not complete within the allowed duration", 0)
	}
	return err
}

// errNotFoundPath is kube-apiserver's answer for a path that names no served resource.
func errNotFoundPath() error {
	return apierrors.NewGenericServerResponse(http.StatusNotFound, "", schema.GroupResource{}, "", "", 0, false)
}

// errMethodNotAllowed is kube-apiserver's answer for a verb a path does not support.
func errMethodNotAllowed(method string) error {
	return apierrors.NewGenericServerResponse(http.StatusMethodNotAllowed, strings.ToLower(method), schema.GroupResource{}, "", "", 0, false)
}

// errNotAcceptable answers an Accept header no served media type satisfies.
func errNotAcceptable() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotAcceptable,
		Reason:  metav1.StatusReasonNotAcceptable,
		Message: "only the following media types are accepted: " + strings.Join(servedMediaTypes, ", "),
	}}
}

// errUnsupportedMediaType answers a request body in a format the server does not decode.
func errUnsupportedMediaType(accepted []string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnsupportedMediaType,
		Reason:  metav1.StatusReasonUnsupportedMediaType,
		Message: "the body of the request was in an unknown format - accepted media types include: " + strings.Join(accepted, ", "),
	}}
}

// apiStatus is err as the Status kube-apiserver would answer; anything that is not already an API
// error is an internal error.
func apiStatus(err error) metav1.Status {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		status = apierrors.NewInternalError(err)
	}
	st := status.Status()
	st.Kind, st.APIVersion = "Status", "v1"
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	return st
}

// writeError answers err as a Status, in YAML when the client asked for YAML and JSON otherwise.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	st := apiStatus(err)
	if st.Code >= 500 && !clientGone(r) {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(st.Details.RetryAfterSeconds))
	}
	body, _ := json.Marshal(st)
	contentType := mediaTypeJSON
	if prefersYAML(r) {
		if y, yerr := yaml.JSONToYAML(body); yerr == nil {
			body, contentType = y, mediaTypeYAML
		}
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(int(st.Code))
	_, _ = w.Write(body)
}
