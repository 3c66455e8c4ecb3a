package endpoints

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sqlkube/sqlkube/server/endpoints/filters"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/endpoints/filters/impersonation"
)

// BenchmarkImpersonationWithoutHeaders is what the impersonation filter adds to a request that
// impersonates nobody: issue 19 asks for no cost then.
func BenchmarkImpersonationWithoutHeaders(b *testing.B) {
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	filter := impersonation.WithConstrainedImpersonation(next, authorizerfactory.NewAlwaysAllowAuthorizer(), filters.StatusCodecs)
	req := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/bench/configmaps", nil)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "bench")
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		filter.ServeHTTP(w, req)
	}
}
