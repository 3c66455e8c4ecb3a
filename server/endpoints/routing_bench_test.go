package endpoints_test

import (
	"net/http/httptest"
	"testing"

	"github.com/sqlkube/sqlkube/server/apiserver"
	"github.com/sqlkube/sqlkube/server/endpoints"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// BenchmarkRouting is the router's part of a request: finding the route of an object's path (a
// custom resource's, a ConfigMap's) and of /readyz.
func BenchmarkRouting(b *testing.B) {
	api := newTestAPI(b, sqltest.SQLiteDSN(b), apiserver.Options{})
	for _, path := range []string{
		"/apis/bench.sqlkube.io/v1/namespaces/gets/widgets/w1",
		"/api/v1/namespaces/default/configmaps/c1",
		"/readyz",
	} {
		b.Run(path, func(b *testing.B) {
			r := httptest.NewRequest("GET", path, nil)
			b.ReportAllocs()
			for b.Loop() {
				if !endpoints.MatchRoute(api.server, r) {
					b.Fatal("no route")
				}
			}
		})
	}
}
