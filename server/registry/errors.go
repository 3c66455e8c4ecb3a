package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sqlkube/sqlkube/sqlstore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"
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

// unclassified answers an error that is no API error as kube-apiserver does: a 500 with the
// error's text and no reason (not an InternalError, whose message would wrap the text).
func unclassified(err error) error {
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error()}}
}

// UnsupportedMediaType answers a request body in a format the server does not decode.
func UnsupportedMediaType(accepted []string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnsupportedMediaType,
		Reason:  metav1.StatusReasonUnsupportedMediaType,
		Message: "the body of the request was in an unknown format - accepted media types include: " + strings.Join(accepted, ", "),
	}}
}
