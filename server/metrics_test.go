package server

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

func TestCountStored(t *testing.T) {
	api := sqliteAPI(t)
	for i := range 3 {
		api.do("POST", "/api/v1/namespaces/default/configmaps", fmt.Sprintf(`{"metadata":{"name":"c%d"}}`, i)).expect(t, http.StatusCreated)
	}
	for storage, want := range map[string]int64{"configmaps": 3, "secrets": 0} {
		if n, err := api.server.countStored(context.Background(), storage); err != nil || n != want {
			t.Errorf("%s: %d, %v; want %d", storage, n, err, want)
		}
	}
}

func TestRouteVerb(t *testing.T) {
	for verb, want := range map[string]string{"create": "POST", "update": "PUT", "patch": "PATCH", "list": "LIST",
		"get": "GET", "watch": "WATCH", "delete": "DELETE", "deletecollection": "DELETECOLLECTION"} {
		if got := routeVerb(&genericrequest.RequestInfo{Verb: verb}); got != want {
			t.Errorf("%s: %s, want %s", verb, got, want)
		}
	}
}
