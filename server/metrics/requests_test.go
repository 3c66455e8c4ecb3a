package metrics

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	genericserverfilters "k8s.io/apiserver/pkg/server/filters"
)

var (
	resolver    = &genericrequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	longRunning = genericserverfilters.BasicLongRunningRequestCheck(sets.NewString("watch"), sets.NewString())
)

func TestRouteVerb(t *testing.T) {
	for verb, want := range map[string]string{"create": "POST", "update": "PUT", "patch": "PATCH", "list": "LIST",
		"get": "GET", "watch": "WATCH", "delete": "DELETE", "deletecollection": "DELETECOLLECTION"} {
		if got := routeVerb(&genericrequest.RequestInfo{Verb: verb}); got != want {
			t.Errorf("%s: %s, want %s", verb, got, want)
		}
	}
}

// serve sends a request through WithRequests, with its information resolved, to next.
func serve(method, target string, next http.HandlerFunc) {
	h := genericfilters.WithRequestInfo(WithRequests(next, longRunning), resolver)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(method, target, nil))
}

// TestRequestsCounted: a resource request is counted under its route's verb, group, resource
// and answer code; a non-resource request is not.
func TestRequestsCounted(t *testing.T) {
	Register()
	created := map[string]string{"verb": "POST", "group": "example.com", "resource": "widgets", "code": "201"}
	before, _ := sample(t, "apiserver_request_total", created)
	serve("POST", "/apis/example.com/v1/namespaces/default/widgets", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})
	if after, _ := sample(t, "apiserver_request_total", created); after != before+1 {
		t.Errorf("apiserver_request_total %v after a create, want %v", after, before+1)
	}
	if n, ok := sample(t, "apiserver_request_duration_seconds", map[string]string{"verb": "POST", "resource": "widgets"}); !ok || n < 1 {
		t.Errorf("apiserver_request_duration_seconds has %v samples (registered %v), want one", n, ok)
	}
	healthz := map[string]string{"code": "200", "resource": ""}
	before, _ = sample(t, "apiserver_request_total", healthz)
	serve("GET", "/healthz", func(http.ResponseWriter, *http.Request) {})
	if after, _ := sample(t, "apiserver_request_total", healthz); after != before {
		t.Errorf("a non-resource request was counted: %v, was %v", after, before)
	}
}

// TestWatchCountedWhileItLasts: a watch is in apiserver_longrunning_requests while it is
// served, and counted under WATCH once it ends.
func TestWatchCountedWhileItLasts(t *testing.T) {
	Register()
	watching := map[string]string{"verb": "WATCH", "resource": "gadgets"}
	var during float64
	serve("GET", "/apis/example.com/v1/gadgets?watch=true", func(w http.ResponseWriter, _ *http.Request) {
		during, _ = sample(t, "apiserver_longrunning_requests", watching)
		w.WriteHeader(http.StatusOK)
	})
	if during != 1 {
		t.Errorf("apiserver_longrunning_requests %v during the watch, want 1", during)
	}
	if after, _ := sample(t, "apiserver_longrunning_requests", watching); after != 0 {
		t.Errorf("apiserver_longrunning_requests %v after the watch, want 0", after)
	}
	if n, _ := sample(t, "apiserver_request_total", map[string]string{"verb": "WATCH", "resource": "gadgets", "code": "200"}); n != 1 {
		t.Errorf("apiserver_request_total %v for the ended watch, want 1", n)
	}
}
