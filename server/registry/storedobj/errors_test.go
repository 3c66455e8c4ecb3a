package storedobj

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// statusOf is the Status a client gets for err: an error that is none is a 500.
func statusOf(err error) metav1.Status {
	if status, ok := err.(apierrors.APIStatus); ok {
		return status.Status()
	}
	return apierrors.NewInternalError(err).Status()
}

func TestStorageErrorMapping(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	tests := []struct {
		err    error
		code   int32
		reason metav1.StatusReason
	}{
		{sqlstore.ErrNotFound, 404, metav1.StatusReasonNotFound},
		{fmt.Errorf("wrapped: %w", sqlstore.ErrExists), 409, metav1.StatusReasonAlreadyExists},
		{sqlstore.ErrConflict, 409, metav1.StatusReasonConflict},
		{&sqlstore.CompactedError{Requested: 3, Compacted: 9}, 410, metav1.StatusReasonExpired},
		{&sqlstore.FutureRevisionError{Requested: 30, Current: 9}, 504, metav1.StatusReasonTimeout},
		{sqlstore.ErrUnavailable, 503, metav1.StatusReasonServiceUnavailable},
		{context.DeadlineExceeded, 504, metav1.StatusReasonTimeout},
		{errors.New("anything else"), 500, metav1.StatusReasonInternalError},
	}
	for _, tt := range tests {
		st := statusOf(StorageError(tt.err, gr, "x"))
		if st.Code != tt.code || st.Reason != tt.reason {
			t.Errorf("%v: got %d %s, want %d %s", tt.err, st.Code, st.Reason, tt.code, tt.reason)
		}
	}
	if st := statusOf(StorageError(&sqlstore.CompactedError{Requested: 3, Compacted: 9}, gr, "")); st.Message != "too old resource version: 3 (9)" {
		t.Errorf("compacted message %q", st.Message)
	}
}

// An unavailable database is a 503 that keeps the driver's words out of the answer but in the
// error chain, for the server's log.
func TestUnavailableHidesCause(t *testing.T) {
	cause := fmt.Errorf("dial tcp: refused: %w", sqlstore.ErrUnavailable)
	err := StorageError(cause, schema.GroupResource{Resource: "pods"}, "p")
	if st := statusOf(err); st.Code != http.StatusServiceUnavailable || strings.Contains(st.Message, "dial") {
		t.Errorf("status = %d %q", st.Code, st.Message)
	}
	if !errors.Is(err, sqlstore.ErrUnavailable) || err.Error() != cause.Error() {
		t.Errorf("cause lost: %v", err)
	}
}

var configMaps = &resource.Resource{Version: "v1", Name: "configmaps", Kind: "ConfigMap", Namespaced: true}

func TestKeys(t *testing.T) {
	crd := &resource.Resource{Group: "example.com", Name: "widgets", CRDName: "widgets.example.com"}
	for _, tt := range []struct{ got, want string }{
		{EtcdKey(configMaps, "ns", "a"), "/registry/configmaps/ns/a"},
		{EtcdKey(crd, "", "w"), "/registry/example.com/widgets/w"},
		{storageKey(configMaps, "ns", "a"), "//configmaps/ns/a"},
	} {
		if tt.got != tt.want {
			t.Errorf("key %q, want %q", tt.got, tt.want)
		}
	}
}

// A get of an object its conversion webhook cannot convert is kube-apiserver's corrupt-object 500;
// any other error is left as it is.
func TestReadFailed(t *testing.T) {
	notDecodable := &NotDecodableError{Revision: "7", Err: errors.New("webhook down")}
	st := statusOf(ReadFailed(configMaps, "ns", "a", notDecodable))
	if st.Code != http.StatusInternalServerError || st.Reason != metav1.StatusReasonInternalError || !strings.Contains(st.Message, "//configmaps/ns/a") {
		t.Errorf("corrupt object: %d %s %q", st.Code, st.Reason, st.Message)
	}
	other := errors.New("other")
	if err := ReadFailed(configMaps, "ns", "a", other); err != other {
		t.Errorf("other error became %v", err)
	}
}

func TestListFailures(t *testing.T) {
	f := NewListFailures(configMaps)
	if f.Err() != nil {
		t.Fatal("an empty list failed")
	}
	notDecodable := &NotDecodableError{Revision: "7", Err: errors.New("webhook down")}
	object := func(i int) sqlstore.Object {
		return sqlstore.Object{Key: sqlstore.Key{Namespace: "ns", Name: fmt.Sprint(i)}}
	}
	for i := range maxUndecodableListed - 1 {
		if err := f.Add(object(i), notDecodable); err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
	}
	st := statusOf(f.Err())
	if st.Reason != metav1.StatusReasonStoreReadError || !strings.HasSuffix(st.Message, "(and 98 more)") || len(st.Details.Causes) != 99 {
		t.Errorf("status %s %q, %d causes", st.Reason, st.Message, len(st.Details.Causes))
	}
	if err := f.Add(object(99), notDecodable); err == nil || len(statusOf(err).Details.Causes) != 101 {
		t.Errorf("the hundredth object did not end the list: %v", err)
	}
	if other := errors.New("other"); f.Add(object(0), other) != other {
		t.Error("another error was collected")
	}
}

func TestUnclassified(t *testing.T) {
	if st := statusOf(Unclassified(errors.New("boom"))); st.Code != 500 || st.Reason != "" || st.Message != "boom" {
		t.Errorf("status %d %q %q", st.Code, st.Reason, st.Message)
	}
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p")
	if Unclassified(notFound) != error(notFound) {
		t.Error("an API error was rewrapped")
	}
}
