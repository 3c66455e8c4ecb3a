package filters

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// bearer authenticates the token "good" as alice.
var bearer = authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
	if r.Header.Get("Authorization") != "Bearer good" {
		return nil, false, nil
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: "alice"}}, true, nil
})

// onlyGets allows alice to get, and nothing else.
var onlyGets = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetUser().GetName() == "alice" && a.GetVerb() == "get" {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
})

// TestChain: a request without credentials any authenticator accepts is 401, one the authorizer
// does not allow 403 with kube's message, and an allowed one reaches the handler as its user.
func TestChain(t *testing.T) {
	var served string
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served = r.URL.Path })
	h := Chain(inner, Config{Log: slog.New(slog.DiscardHandler), Limits: DefaultLimits(), Authenticator: bearer, Authorizer: onlyGets})
	for _, c := range []struct {
		method, token string
		code          int
		body          string
	}{
		{"GET", "", http.StatusUnauthorized, `"reason":"Unauthorized"`},
		{"DELETE", "good", http.StatusForbidden, `configmaps \"a\" is forbidden: User \"alice\" cannot delete resource \"configmaps\" in API group \"\" in the namespace \"ns\"`},
		{"GET", "good", http.StatusOK, ""},
	} {
		served = ""
		req := httptest.NewRequest(c.method, "/api/v1/namespaces/ns/configmaps/a", nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.body) || (c.code == http.StatusOK) != (served != "") {
			t.Errorf("%s with %q: %d %s (served %q)", c.method, c.token, rec.Code, rec.Body, served)
		}
	}
}

// TestHealthChecksAreNotErrors: the health endpoints' 500 is an answer (a check not passing
// yet), logged at the request log's level, not at error.
func TestHealthChecksAreNotErrors(t *testing.T) {
	for path, want := range map[string]bool{"/readyz": true, "/readyz/etcd": true, "/livez": true, "/healthz": true, "/readyzz": false, "/api/v1/pods": false} {
		if got := isHealthCheck(path); got != want {
			t.Errorf("isHealthCheck(%q) = %v", path, got)
		}
	}
}

// TestLongRunning: watches and the connecting verbs are long-running, other requests are not.
func TestLongRunning(t *testing.T) {
	for target, want := range map[string]bool{
		"/api/v1/pods?watch=true":            true,
		"/api/v1/namespaces/a/pods/p/exec":   true,
		"/api/v1/namespaces/a/pods/p/log":    true,
		"/api/v1/namespaces/a/configmaps":    false,
		"/api/v1/namespaces/a/configmaps/cm": false,
	} {
		r := httptest.NewRequest("GET", target, nil)
		info, err := RequestInfoResolver.NewRequestInfo(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := LongRunning(r, info); got != want {
			t.Errorf("LongRunning(%s) = %v", target, got)
		}
	}
}
