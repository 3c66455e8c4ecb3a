package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ctx is the context of client calls; a test's own deadline bounds them.
var ctx = context.Background()

// assertStatus checks that got is exactly the Status want, type metadata aside.
func assertStatus(t testing.TB, got metav1.Status, want *apierrors.StatusError) {
	t.Helper()
	got.TypeMeta = metav1.TypeMeta{}
	if diff := cmp.Diff(want.ErrStatus, got); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}
}

// assertAPIError checks that err is the API error want, exactly.
func assertAPIError(t testing.TB, err error, want *apierrors.StatusError) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Errorf("error %v (%T) is not an API Status, want %d %q", err, err, want.ErrStatus.Code, want.ErrStatus.Message)
		return
	}
	assertStatus(t, status.Status(), want)
}

// assertStatusPrefix checks a Status whose message ends in details kube-apiserver's build decides
// (scheme names, the media types compiled in): code, reason and the start of the message.
func assertStatusPrefix(t testing.TB, got metav1.Status, code int32, reason metav1.StatusReason, messagePrefix string) {
	t.Helper()
	if got.Status != metav1.StatusFailure || got.Code != code || got.Reason != reason || !strings.HasPrefix(got.Message, messagePrefix) {
		t.Errorf("Status = {status %q, code %d, reason %q, message %q}, want {Failure, %d, %q, message starting %q}",
			got.Status, got.Code, got.Reason, got.Message, code, reason, messagePrefix)
	}
}

// conflictOnStale is the 409 kube-apiserver answers for a write on a stale resourceVersion.
func conflictOnStale(resource schema.GroupResource, name string) *apierrors.StatusError {
	return apierrors.NewConflict(resource, name,
		errors.New("the object has been modified; please apply your changes to the latest version and try again"))
}

// invalidName is the 422 for a name that fails nameRule (one of apimachinery's name validators).
func invalidName(kind schema.GroupKind, name string, nameRule func(string, bool) []string) *apierrors.StatusError {
	var errs field.ErrorList
	for _, msg := range nameRule(name, false) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), name, msg))
	}
	return apierrors.NewInvalid(kind, name, errs)
}

// eventually polls condition until it returns true or the deadline passes.
func eventually(t testing.TB, timeout time.Duration, what string, condition func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		done, err := condition()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %s (last error: %v)", what, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
