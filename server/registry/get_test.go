package registry_test

import (
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A get's resourceVersion is a not-older-than bound: the latest state is read, after waiting for
// a newer revision for a while (504 if it does not come).
func TestGetResourceVersion(t *testing.T) {
	r := onSQLite(t)
	obj := r.mustCreate("configmaps", "default", `{"metadata":{"name":"g"}}`)
	g := r.ref("configmaps", "default", "g")
	for _, rv := range []string{"", "0", obj.GetResourceVersion()} {
		if _, err := r.reg.Get(t.Context(), g, &metav1.GetOptions{ResourceVersion: rv}); err != nil {
			t.Fatalf("get at %q: %v", rv, err)
		}
	}
	_, err := r.reg.Get(t.Context(), g, &metav1.GetOptions{ResourceVersion: "999999"})
	wantCode(t, err, http.StatusGatewayTimeout)
	_, err = r.reg.Get(t.Context(), g, &metav1.GetOptions{ResourceVersion: "x"})
	wantCode(t, err, http.StatusBadRequest)
}
