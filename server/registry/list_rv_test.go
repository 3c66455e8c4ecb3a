package registry_test

import (
	"net/http"
	"slices"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A list's resourceVersion, resourceVersionMatch and limit select the state it reads and how
// much of it, as kube-apiserver's rules say.
func TestListResourceVersionMatrix(t *testing.T) {
	onBackends(t, func(t *testing.T, r *testRegistry) {
		for _, name := range []string{"a", "b", "c"} {
			r.mustCreate("configmaps", "default", `{"metadata":{"name":"`+name+`"}}`)
		}
		r1 := r.revision()
		r.mustCreate("configmaps", "default", `{"metadata":{"name":"d"}}`)
		r.mustDelete(r.ref("configmaps", "default", "a"), &metav1.DeleteOptions{})
		current := r.revision()
		cur, old := strconv.FormatInt(current, 10), strconv.FormatInt(r1, 10)
		future := strconv.FormatInt(current+100, 10)
		latest := []string{"b", "c", "d"}
		atR1 := []string{"a", "b", "c"}
		exact, notOlder := metav1.ResourceVersionMatchExact, metav1.ResourceVersionMatchNotOlderThan

		ok := []struct {
			opts      internalversion.ListOptions
			rv        string
			items     []string
			continue_ bool
		}{
			{internalversion.ListOptions{}, cur, latest, false},
			{internalversion.ListOptions{ResourceVersion: "0"}, cur, latest, false},
			{internalversion.ListOptions{ResourceVersion: old}, cur, latest, false},
			{internalversion.ListOptions{ResourceVersion: old, ResourceVersionMatch: notOlder}, cur, latest, false},
			{internalversion.ListOptions{ResourceVersion: "0", ResourceVersionMatch: notOlder}, cur, latest, false},
			{internalversion.ListOptions{ResourceVersion: old, ResourceVersionMatch: exact}, old, atR1, false},
			{internalversion.ListOptions{ResourceVersion: old, Limit: 2}, old, atR1[:2], true},
			{internalversion.ListOptions{ResourceVersion: old, ResourceVersionMatch: exact, Limit: 2}, old, atR1[:2], true},
			{internalversion.ListOptions{ResourceVersion: old, ResourceVersionMatch: notOlder, Limit: 2}, cur, latest[:2], true},
			// Served from kube-apiserver's watch cache, which ignores limit.
			{internalversion.ListOptions{ResourceVersion: "0", Limit: 2}, cur, latest, false},
			{internalversion.ListOptions{Limit: 2}, cur, latest[:2], true},
			{internalversion.ListOptions{Limit: 3}, cur, latest, false},
			{internalversion.ListOptions{Limit: -1}, cur, latest, false},
		}
		for _, tt := range ok {
			names, meta := r.mustList(&tt.opts)
			if meta.ResourceVersion != tt.rv || !slices.Equal(names, tt.items) || (meta.Continue != "") != tt.continue_ {
				t.Errorf("%+v: got rv %s items %v continue %q; want rv %s items %v continue %v",
					tt.opts, meta.ResourceVersion, names, meta.Continue, tt.rv, tt.items, tt.continue_)
			}
		}

		tooLarge := func(rv string) metav1.Status {
			return metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGatewayTimeout, Reason: metav1.StatusReasonTimeout,
				Message: "Timeout: Too large resource version: " + rv + ", current: " + cur,
				Details: &metav1.StatusDetails{RetryAfterSeconds: 1, Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}}}
		}
		bad := func(msg string) metav1.Status {
			return metav1.Status{Status: metav1.StatusFailure, Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest, Message: msg}
		}
		errs := []struct {
			opts internalversion.ListOptions
			want metav1.Status
		}{
			{internalversion.ListOptions{ResourceVersion: "abc"}, bad(`invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`)},
			{internalversion.ListOptions{ResourceVersion: "-5"}, bad(`invalid resource version: resourceVersion: Invalid value: "-5": strconv.ParseUint: parsing "-5": invalid syntax`)},
			{internalversion.ListOptions{ResourceVersion: future}, tooLarge(future)},
			{internalversion.ListOptions{ResourceVersion: future, ResourceVersionMatch: exact}, tooLarge(future)},
			{internalversion.ListOptions{ResourceVersion: future, Limit: 1}, tooLarge(future)},
			{internalversion.ListOptions{Continue: "bm90LWpzb24"}, bad("invalid continue token: continue key is not valid: invalid character 'o' in literal null (expecting 'u')")},
		}
		for _, tt := range errs {
			_, _, err := r.list(r.ref("configmaps", "default", ""), &tt.opts)
			wantStatus(t, err, tt.want)
		}
	})
}
