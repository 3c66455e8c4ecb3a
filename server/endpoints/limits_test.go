package endpoints_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/server/endpoints/filters"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/sqlkube/sqlkube/server/apiserver"
	"github.com/sqlkube/sqlkube/server/controllers/controllertest"
	"github.com/sqlkube/sqlkube/server/endpoints"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// limitedChain serves inner behind the server's request limits and timeouts, for a user that is
// not in system:masters (which the in-flight limit never refuses).
func limitedChain(s *endpoints.Server, inner http.Handler) *httptest.Server {
	h := endpoints.Limited(s, inner)
	asUser := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(genericrequest.WithUser(r.Context(), &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}})))
	})
	srv := httptest.NewServer(genericfilters.WithRequestInfo(asUser, endpoints.RequestInfoResolver))
	return srv
}

func get(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

func TestInFlightLimitRefusesBeyondItButNotWatches(t *testing.T) {
	api := newTestAPI(t, sqltest.SQLiteDSN(t), apiserver.Options{Options: endpoints.Options{Limits: &filters.Limits{MaxRequestsInFlight: 1, MaxMutatingRequestsInFlight: 1, RequestTimeout: time.Minute}}})
	inside, release := make(chan struct{}), make(chan struct{})
	srv := limitedChain(api.server, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("block") != "" {
			inside <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	done := make(chan int)
	go func() {
		code, _, _ := get(t, srv.URL+"/api/v1/namespaces/default/configmaps?block=1")
		done <- code
	}()
	<-inside
	code, header, body := get(t, srv.URL+"/api/v1/namespaces/default/configmaps")
	if code != http.StatusTooManyRequests || header.Get("Retry-After") != "1" || body != "Too many requests, please try again later.\n" {
		t.Errorf("second list: %d, Retry-After %q, %q", code, header.Get("Retry-After"), body)
	}
	if code, _, _ := get(t, srv.URL+"/api/v1/namespaces/default/configmaps?watch=true"); code != http.StatusOK {
		t.Errorf("watch beside the limit: %d, want 200 (watches are not counted)", code)
	}
	close(release)
	if code := <-done; code != http.StatusOK {
		t.Errorf("first list: %d", code)
	}
	if code, _, _ := get(t, srv.URL+"/api/v1/namespaces/default/configmaps"); code != http.StatusOK {
		t.Errorf("list after the first finished: %d", code)
	}
}

func TestRequestTimeout(t *testing.T) {
	api := newTestAPI(t, sqltest.SQLiteDSN(t), apiserver.Options{Options: endpoints.Options{Limits: &filters.Limits{RequestTimeout: 100 * time.Millisecond}}})
	abandoned := make(chan error, 2)
	srv := limitedChain(api.server, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // the handler's context ends at the deadline, abandoning its work
		abandoned <- r.Context().Err()
	}))
	defer srv.Close()
	for _, path := range []string{"/api/v1/namespaces/default/configmaps/x", "/api/v1/namespaces/default/configmaps/x?timeout=10ms"} {
		code, _, body := get(t, srv.URL+path)
		if code != http.StatusGatewayTimeout || !strings.Contains(body, `"reason":"Timeout"`) {
			t.Errorf("%s: %d %s", path, code, body)
		}
		if err := <-abandoned; err != context.DeadlineExceeded {
			t.Errorf("%s: handler's context ended with %v", path, err)
		}
	}
	if code, _, body := get(t, srv.URL+"/api/v1/namespaces/default/configmaps/x?timeout=soon"); code != http.StatusBadRequest {
		t.Errorf("timeout=soon: %d %s", code, body)
	}
}

func TestUnknownResourcesAreKubesPlain404(t *testing.T) {
	api := sqliteAPI(t)
	if body := string(api.do("GET", "/apis/example.com/v1/things", "").expect(t, 404).body); body != "404 page not found\n" {
		t.Errorf("an unknown resource: %q", body)
	}
}

func TestHealthChecksAsKube(t *testing.T) {
	api := sqliteAPI(t)
	want := "[+]ping ok\n[+]log ok\n[+]database ok\n" +
		"[+]poststarthook/apiserver/bootstrap-system-flowcontrol-configuration ok\n[+]informer-sync ok\n"
	controllertest.Eventually(t, "ready", func() bool { return api.do("GET", "/readyz", "").code == http.StatusOK })
	if body := string(api.do("GET", "/readyz?verbose", "").expect(t, 200).body); body != want+"[+]shutdown ok\nreadyz check passed\n" {
		t.Errorf("/readyz?verbose:\n%s", body)
	}
	if body := string(api.do("GET", "/readyz/database", "").expect(t, 200).body); body != "ok" {
		t.Errorf("/readyz/database: %q", body)
	}
	api.server.BeginShutdown()
	if body := string(api.do("GET", "/readyz", "").expect(t, 500).body); !strings.Contains(body, "[-]shutdown failed: reason withheld\n") {
		t.Errorf("/readyz while shutting down:\n%s", body)
	}
	api.do("GET", "/readyz?exclude=shutdown", "").expect(t, 200)
	if body := string(api.do("GET", "/livez", "").expect(t, 200).body); body != "ok" {
		t.Errorf("/livez while shutting down: %q", body)
	}
}

// The priority-and-fairness controller reads its configuration and writes its status through
// the loopback client: a FlowSchema naming a missing priority level gets kube's Dangling
// condition.
func TestPriorityAndFairnessConfigurationThroughLoopback(t *testing.T) {
	api := sqliteAPI(t)
	const path = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
	api.do("POST", path, `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"mine"},
		"spec":{"priorityLevelConfiguration":{"name":"nowhere"},"matchingPrecedence":500,
		"rules":[{"subjects":[{"kind":"User","user":{"name":"bob"}}],"nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}]}]}}`).expect(t, 201)
	controllertest.Eventually(t, "the Dangling condition", func() bool {
		var fs flowcontrolv1.FlowSchema
		resp := api.do("GET", path+"/mine", "")
		return resp.code == 200 && json.Unmarshal(resp.body, &fs) == nil && len(fs.Status.Conditions) == 1 &&
			fs.Status.Conditions[0].Type == flowcontrolv1.FlowSchemaConditionDangling && fs.Status.Conditions[0].Status == flowcontrolv1.ConditionTrue
	})
	// The request's user is in system:masters: kube's mandatory exempt FlowSchema (not stored in
	// this test, so without a uid) classified it.
	if _, ok := api.do("GET", "/api/v1/namespaces", "").header[http.CanonicalHeaderKey("X-Kubernetes-PF-FlowSchema-UID")]; !ok {
		t.Error("no priority and fairness headers on a request")
	}
}
