// Package storedobj is the registry's view of objects as stored: decoding them, serving them
// in a resource's version, and the API errors (Status codes and messages as kube-apiserver's)
// for storage's failures and for objects that cannot be read. The registry and the HTTP layer
// share it; it knows nothing of either.
package storedobj

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"
)

// ConflictMessage is kube-apiserver's wording for a stale resourceVersion.
const ConflictMessage = "the object has been modified; please apply your changes to the latest version and try again"

// StorageError turns a storage error about the object gr/name into the API error
// kube-apiserver answers in the same situation.
func StorageError(err error, gr schema.GroupResource, name string) error {
	var compacted *sqlstore.CompactedError
	var future *sqlstore.FutureRevisionError
	var unreadable *sqlstore.UnreadableError
	switch {
	case errors.As(err, &unreadable):
		// The transformer's own words: "identity transformer tried to read encrypted data", ...
		return apierrors.NewInternalError(unreadable.Err)
	case errors.Is(err, sqlstore.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, sqlstore.ErrExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, sqlstore.ErrConflict):
		return apierrors.NewConflict(gr, name, errors.New(ConflictMessage))
	case errors.As(err, &compacted):
		return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", compacted.Requested, compacted.Compacted))
	case errors.As(err, &future):
		return storage.NewTooLargeResourceVersionError(uint64(future.Requested), uint64(future.Current), 1)
	case errors.Is(err, sqlstore.ErrUnstorableKey):
		// kube-apiserver would store it; neither database can.
		return apierrors.NewBadRequest(fmt.Sprintf("%s %q: a name or namespace must be valid UTF-8 without NUL to be stored", gr, name))
	case errors.Is(err, sqlstore.ErrUnavailable), errors.Is(err, sqlstore.ErrClosed):
		return unavailable{err}
	case errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError("request did not complete within the allowed duration", 0)
	}
	return err
}

// unavailable is the 503 of a database the store cannot reach: the client learns that it may
// try again; the cause, with the driver's words, is for the server's log (Error).
type unavailable struct{ cause error }

func (e unavailable) Error() string { return e.cause.Error() }

func (e unavailable) Unwrap() error { return e.cause }

func (e unavailable) Status() metav1.Status {
	return apierrors.NewServiceUnavailable("the database is unavailable, try again later").Status()
}

// ListStorageError is StorageError for a list of res: a value the transformer cannot read is
// named by its etcd key, as kube-apiserver's storage names it.
func ListStorageError(err error, res *resource.Resource) error {
	var unreadable *sqlstore.UnreadableError
	if errors.As(err, &unreadable) {
		key := EtcdKey(res, unreadable.Key.Namespace, unreadable.Key.Name)
		return apierrors.NewInternalError(fmt.Errorf("unable to transform key %q: %w", key, unreadable.Err))
	}
	return StorageError(err, res.GroupResource(), "")
}

// NotDecodableError is a stored object that could not be turned into the version asked for:
// its CRD's conversion webhook failed. Where kube-apiserver reads an object to change it, or
// answers a write, it answers this as an error that is not a Status: 500, no reason, and
// "object not decodable revision=N: " with the converter's error. Gets, deletes and lists
// answer it as a corrupt object instead (ReadFailed, ListFailed).
type NotDecodableError struct {
	Revision string
	Err      error
}

func (e *NotDecodableError) Error() string {
	return fmt.Sprintf("object not decodable revision=%s: %v", e.Revision, e.Err)
}

func (e *NotDecodableError) Unwrap() error { return e.Err }

func (e *NotDecodableError) Status() metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: e.Error()}
}

// ReadFailed is err as a get or a delete of res's object namespace/name answers it: a
// NotDecodableError is kube-apiserver's InternalError about a corrupt object at its storage key.
func ReadFailed(res *resource.Resource, namespace, name string, err error) error {
	var notDecodable *NotDecodableError
	if !errors.As(err, &notDecodable) {
		return err
	}
	return apierrors.NewInternalError(storage.NewCorruptObjError(storageKey(res, namespace, name), notDecodable))
}

// storageKey is the key kube-apiserver's storage gives an object of res, as its errors name it.
func storageKey(res *resource.Resource, namespace, name string) string {
	key := "/" + res.Group + "/" + res.Name
	if namespace != "" {
		key += "/" + namespace
	}
	return key + "/" + name
}

// maxUndecodableListed is how many objects that could not be converted a list names before it
// gives up, as kube-apiserver's.
const maxUndecodableListed = 100

// ListFailures collects the objects of a list that could not be converted, as kube-apiserver's
// storage does, to answer them all in one error.
type ListFailures struct {
	res    *resource.Resource
	causes []metav1.StatusCause
	first  string
	count  int
}

func NewListFailures(res *resource.Resource) *ListFailures { return &ListFailures{res: res} }

// Add records err about the stored object o if it is a NotDecodableError, and returns nil so
// that the list goes on; any other error is returned, and so is the list's error once it names
// as many objects as kube-apiserver's does before giving up.
func (f *ListFailures) Add(o sqlstore.Object, err error) error {
	var notDecodable *NotDecodableError
	if !errors.As(err, &notDecodable) {
		return err
	}
	// A list names objects by their etcd keys.
	corrupt := storage.NewCorruptObjError(EtcdKey(f.res, o.Namespace, o.Name), notDecodable)
	if f.count == 0 {
		f.first = corrupt.Error()
	}
	f.count++
	f.causes = append(f.causes, metav1.StatusCause{Type: metav1.CauseTypeUnexpectedServerResponse, Field: corrupt.Key, Message: corrupt.Error()})
	if f.count < maxUndecodableListed {
		return nil
	}
	f.causes = append(f.causes, metav1.StatusCause{Type: metav1.CauseTypeTooMany, Message: "too many errors, the list is truncated"})
	return f.Err()
}

// Err is the list's error if some objects could not be converted: kube-apiserver's 500
// StorageReadError naming the first, with every one as a cause.
func (f *ListFailures) Err() error {
	if f.count == 0 {
		return nil
	}
	message := fmt.Sprintf("failed to read one or more %s from the storage: %s", f.res.GroupResource(), f.first)
	if f.count > 1 {
		message = fmt.Sprintf("%s (and %d more)", message, f.count-1)
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonStoreReadError, Message: message,
		Details: &metav1.StatusDetails{Group: f.res.Group, Kind: f.res.Name, Name: "list", Causes: f.causes},
	}}
}

// Unclassified answers an error that is no API error as kube-apiserver does: a 500 with the
// error's text and no reason (not an InternalError, whose message would wrap the text).
func Unclassified(err error) error {
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
