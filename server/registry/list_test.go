package registry_test

import (
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sqlkube/sqlkube/server/registry"
)

// mustList lists the config maps of default with opts, failing the test on an error.
func (r *testRegistry) mustList(opts *internalversion.ListOptions) ([]string, metav1.ListMeta) {
	r.t.Helper()
	names, meta, err := r.list(r.ref("configmaps", "default", ""), opts)
	if err != nil {
		r.t.Fatalf("listing with %+v: %v", opts, err)
	}
	return names, meta
}

func TestListPagination(t *testing.T) {
	onBackends(t, func(t *testing.T, r *testRegistry) {
		var names []string
		for i := range 7 {
			names = append(names, fmt.Sprintf("cm-%d", i))
			r.mustCreate("configmaps", "default", fmt.Sprintf(`{"metadata":{"name":"cm-%d"}}`, i))
		}
		got, first := r.mustList(&internalversion.ListOptions{Limit: 3})
		if first.RemainingItemCount == nil || *first.RemainingItemCount != 4 {
			t.Fatalf("remainingItemCount %v, want 4", first.RemainingItemCount)
		}
		// Writes between pages do not show: the pages read the first page's snapshot.
		r.mustDelete(r.ref("configmaps", "default", "cm-5"), &metav1.DeleteOptions{})
		r.mustCreate("configmaps", "default", `{"metadata":{"name":"cm-35"}}`)
		r.mustCreate("configmaps", "default", `{"metadata":{"name":"cm-9"}}`)
		r.mustUpdate(r.ref("configmaps", "default", "cm-6"), `{"metadata":{"name":"cm-6","labels":{"changed":"yes"}}}`)

		for token := first.Continue; token != ""; {
			page, meta := r.mustList(&internalversion.ListOptions{Limit: 3, Continue: token})
			if meta.ResourceVersion != first.ResourceVersion {
				t.Fatalf("page at %s, want the snapshot %s", meta.ResourceVersion, first.ResourceVersion)
			}
			got = append(got, page...)
			token = meta.Continue
			if token == "" && meta.RemainingItemCount != nil {
				t.Fatal("last page has remainingItemCount")
			}
		}
		if !slices.Equal(got, names) {
			t.Fatalf("pages gave %v, want %v", got, names)
		}

		// A token belongs to its list.
		_, _, err := r.list(r.ref("configmaps", "kube-system", ""), &internalversion.ListOptions{Continue: first.Continue})
		wantStatus(t, err, metav1.Status{Status: metav1.StatusFailure, Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
			Message: "invalid continue token: continue key is not valid: the token belongs to another list"})
		_, _, err = r.list(r.ref("configmaps", "default", ""), &internalversion.ListOptions{ResourceVersion: "5", Continue: first.Continue})
		wantStatus(t, err, metav1.Status{Status: metav1.StatusFailure, Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
			Message: "specifying resource version is not allowed when using continue"})
		r.mustList(&internalversion.ListOptions{ResourceVersion: "0", Continue: first.Continue})

		// Once the snapshot is compacted: 410, with a token that goes on at the latest state.
		current := r.revision()
		if err := r.store.Compact(t.Context(), current); err != nil {
			t.Fatal(err)
		}
		_, _, err = r.list(r.ref("configmaps", "default", ""), &internalversion.ListOptions{Limit: 3, Continue: first.Continue})
		var status apierrors.APIStatus
		if !apierrors.IsResourceExpired(err) || !asStatus(err, &status) ||
			!strings.HasPrefix(status.Status().Message, "The provided continue parameter is too old to display a consistent list result.") || status.Status().Continue == "" {
			t.Fatalf("compacted continue: %v", err)
		}
		rest, meta := r.mustList(&internalversion.ListOptions{Limit: 10, Continue: status.Status().Continue})
		if want := []string{"cm-3", "cm-35", "cm-4", "cm-6", "cm-9"}; !slices.Equal(rest, want) || meta.ResourceVersion != strconv.FormatInt(current, 10) {
			t.Fatalf("continuing at latest: %v at %s, want %v at %d", rest, meta.ResourceVersion, want, current)
		}
		_, _, err = r.list(r.ref("configmaps", "default", ""), &internalversion.ListOptions{ResourceVersion: first.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		wantStatus(t, err, metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired,
			Message: fmt.Sprintf("too old resource version: %s (%d)", first.ResourceVersion, current)})
	})
}

// Pages read while another client keeps creating, updating and deleting are together exactly
// the snapshot of the first page.
func TestListPagesUnderConcurrentWrites(t *testing.T) {
	onBackends(t, func(t *testing.T, r *testRegistry) {
		for i := range 30 {
			r.mustCreate("configmaps", "default", fmt.Sprintf(`{"metadata":{"name":"p-%02d"}}`, i))
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		var writes atomic.Int64
		go func() {
			defer close(done)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r.write(fmt.Sprintf("p-%02d-new-%d", i%30, i), fmt.Sprintf("p-%02d", (i*7)%30), fmt.Sprintf("p-%02d", (i*11)%30), i)
				writes.Add(3)
			}
		}()
		for writes.Load() == 0 {
			runtime.Gosched() // the first page must not come before the writer has started
		}
		got, first := r.mustList(&internalversion.ListOptions{Limit: 4})
		for token := first.Continue; token != ""; {
			page, meta := r.mustList(&internalversion.ListOptions{Limit: 4, Continue: token})
			got = append(got, page...)
			token = meta.Continue
		}
		close(stop)
		<-done
		if writes.Load() < 6 {
			t.Fatalf("only %d writes ran while paging", writes.Load())
		}
		exact, _ := r.mustList(&internalversion.ListOptions{ResourceVersion: first.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if !slices.Equal(got, exact) {
			t.Fatalf("pages gave %v\nsnapshot %s is %v", got, first.ResourceVersion, exact)
		}
	})
}

// write creates, deletes and updates a config map from a goroutine that is not the test's,
// ignoring the answers (the object to delete may be gone already).
func (r *testRegistry) write(create, remove, update string, i int) {
	ctx := r.t.Context()
	configMaps := registry.Ref{Resource: r.types["configmaps"], Namespace: "default"}
	if obj, err := parseObject(configMaps, fmt.Sprintf(`{"metadata":{"name":%q}}`, create)); err == nil {
		_, _, _ = r.reg.Create(ctx, configMaps, obj, &metav1.CreateOptions{})
	}
	configMaps.Name = remove
	_, _, _ = r.reg.Delete(ctx, configMaps, &metav1.DeleteOptions{})
	configMaps.Name = update
	if obj, err := parseObject(configMaps, fmt.Sprintf(`{"metadata":{"name":%q},"data":{"i":"%d"}}`, update, i)); err == nil {
		_, _, _ = r.reg.Update(ctx, configMaps, obj, &metav1.UpdateOptions{})
	}
}
