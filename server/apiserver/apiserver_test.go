package apiserver_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/server/endpoints/filters"

	"github.com/sqlkube/sqlkube/server/apiserver"
	"github.com/sqlkube/sqlkube/server/auth"
	"github.com/sqlkube/sqlkube/server/controllers"
	"github.com/sqlkube/sqlkube/server/endpoints"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// started is a server New assembled on a real store, reached over HTTP.
type started struct {
	t   *testing.T
	url string
}

func start(t *testing.T, dsn string, opts apiserver.Options) *started {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	store, err := sqlstore.Open(ctx, sqltest.Database(t, dsn, sqlstore.SQLite, sqlstore.Postgres), sqlstore.Options{Mark: apiserver.StoreMark})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(ctx, store, opts)
	if err != nil {
		t.Fatalf("apiserver.New: %v", err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		cancel()
		_ = store.Close()
	})
	return &started{t: t, url: hs.URL}
}

// get answers GET path with token as the bearer ("" for none).
func (s *started) get(path, token string) (int, string) {
	s.t.Helper()
	req, err := http.NewRequest("GET", s.url+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// waitFor waits up to 30 s for GET path to answer code.
func (s *started) waitFor(path, token string, code int) string {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, body := s.get(path, token)
		if got == code {
			return body
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("GET %s: %d %s, want %d", path, got, body, code)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkDefaultServiceAccount creates a namespace and waits for its default ServiceAccount.
func (s *started) checkDefaultServiceAccount() {
	s.t.Helper()
	req, _ := http.NewRequest("POST", s.url+"/api/v1/namespaces", strings.NewReader(`{"metadata":{"name":"demo"}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		s.t.Fatalf("creating a namespace: %v %v", resp, err)
	}
	resp.Body.Close()
	s.waitFor("/api/v1/namespaces/demo/serviceaccounts/default", "", http.StatusOK)
}

// TestAssembledWithoutSecurity: the whole program on each backend becomes ready with
// kube-apiserver's checks, runs its controllers (the flow-control configuration is written, a
// new namespace gets its default ServiceAccount), and serves every request as an admin.
func TestAssembledWithoutSecurity(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		s := start(t, dsn, apiserver.Options{})
		ready := s.waitFor("/readyz?verbose", "", http.StatusOK)
		for _, check := range []string{"[+]database ok", "[+]poststarthook/apiserver/bootstrap-system-flowcontrol-configuration ok", "[+]informer-sync ok", "[+]shutdown ok"} {
			if !strings.Contains(ready, check) {
				t.Errorf("/readyz?verbose lacks %q:\n%s", check, ready)
			}
		}
		if strings.Contains(ready, "rbac/bootstrap-roles") {
			t.Errorf("an unsecured server waits for the RBAC policy:\n%s", ready)
		}
		s.waitFor("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/exempt", "", http.StatusOK)
		s.checkDefaultServiceAccount()
	})
}

// TestAssembledWithSecurity: with authentication and RBAC, readiness also waits for the
// bootstrap policy; a token's user is authorized by it (system:masters may do anything, an
// unknown token is 401, a user the policy grants nothing is 403).
func TestAssembledWithSecurity(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("admin-token,admin,1,system:masters\nalice-token,alice,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, sqltest.SQLiteDSN(t), apiserver.Options{
		Security: &apiserver.Security{Authentication: auth.Authentication{TokenAuthFile: tokens}, AuthorizationModes: []string{auth.ModeRBAC}},
		Options:  endpoints.Options{Limits: &filters.Limits{MaxRequestsInFlight: 10, MaxMutatingRequestsInFlight: 10, RequestTimeout: time.Minute}},
	})
	ready := s.waitFor("/readyz?verbose", "admin-token", http.StatusOK)
	if !strings.Contains(ready, "[+]poststarthook/rbac/bootstrap-roles ok") || strings.Contains(ready, "flowcontrol") {
		t.Errorf("/readyz?verbose with RBAC and without priority and fairness:\n%s", ready)
	}
	s.waitFor("/api/v1/namespaces/default/configmaps", "admin-token", http.StatusOK)
	if code, _ := s.get("/api/v1/namespaces/default/configmaps", "wrong-token"); code != http.StatusUnauthorized {
		t.Errorf("an unknown token: %d, want 401", code)
	}
	if code, _ := s.get("/api/v1/namespaces/default/configmaps", "alice-token"); code != http.StatusForbidden {
		t.Errorf("a user without a role: %d, want 403", code)
	}
}

// TestStartedOnceReady: Options.Started is called once, when the server has started and is
// ready (the flow-control configuration it writes is written).
func TestStartedOnceReady(t *testing.T) {
	var calls atomic.Int32
	url := make(chan string, 1)
	ready := make(chan string, 1)
	s := start(t, sqltest.SQLiteDSN(t), apiserver.Options{Started: func() {
		calls.Add(1)
		resp, err := http.Get(<-url + "/readyz")
		if err != nil {
			ready <- err.Error()
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		ready <- fmt.Sprint(resp.StatusCode, " ", string(body))
	}})
	url <- s.url
	select {
	case got := <-ready:
		if got != "200 ok" {
			t.Errorf("/readyz when Started is called: %s, want 200 ok", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Started was not called within 30 s")
	}
	s.waitFor("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/exempt", "", http.StatusOK)
	if n := calls.Load(); n != 1 {
		t.Errorf("Started called %d times, want 1", n)
	}
}

// TestControllersLeftToKubeControllerManager: the controllers --controllers leaves out are named
// in the start log as left to kube-controller-manager, and those it keeps still run (a new
// namespace gets its default ServiceAccount).
func TestControllersLeftToKubeControllerManager(t *testing.T) {
	var log syncBuilder
	s := start(t, sqltest.SQLiteDSN(t), apiserver.Options{
		Controllers: controllers.Selection{"*", "-garbage-collector-controller", "-namespace-controller"},
		Options:     endpoints.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))},
	})
	s.waitFor("/readyz", "", http.StatusOK)
	want := `running=serviceaccount-controller,root-ca-certificate-publisher-controller,clusterrole-aggregation-controller,validatingadmissionpolicy-status-controller leftToKubeControllerManager=namespace-controller,garbage-collector-controller`
	if !strings.Contains(log.String(), want) {
		t.Errorf("the start log lacks %q:\n%s", want, log.String())
	}
	s.checkDefaultServiceAccount()
}

// syncBuilder is a strings.Builder safe for the server's goroutines to log to.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
