package loopback

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

var resolver = &genericrequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

// seen is what the routes saw of the last request.
type seen struct {
	user user.Info
	info *genericrequest.RequestInfo
}

// namespaceRoutes answers every request with the Namespace it names, and reports who asked and
// what the request was resolved to.
func namespaceRoutes(requests chan<- seen) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := genericrequest.UserFrom(r.Context())
		info, _ := genericrequest.RequestInfoFrom(r.Context())
		requests <- seen{user: u, info: info}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": info.Name}})
	})
}

// start makes a client and serves routes, resolving the request's information first as the
// server's routes do.
func start(ctx context.Context, t *testing.T, routes http.Handler) *Client {
	lb, err := New()
	if err != nil {
		t.Fatal(err)
	}
	lb.Serve(ctx, genericfilters.WithRequestInfo(routes, resolver))
	return lb
}

// TestServesRoutesAsAPIServer: the client reaches the routes as system:apiserver in
// system:masters.
func TestServesRoutesAsAPIServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	requests := make(chan seen, 1)
	lb := start(ctx, t, namespaceRoutes(requests))
	ns, err := lb.Client.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil || ns.Name != "kube-system" {
		t.Fatalf("get: %v, %v", ns, err)
	}
	got := <-requests
	if got.user.GetName() != user.APIServerUser || !sets.New(got.user.GetGroups()...).Has(user.SystemPrivilegedGroup) {
		t.Errorf("user %v, want %s in %s", got.user, user.APIServerUser, user.SystemPrivilegedGroup)
	}
	if got.info == nil || got.info.Verb != "get" || got.info.Resource != "namespaces" || got.info.Name != "kube-system" {
		t.Errorf("request info %+v, want get namespaces kube-system", got.info)
	}
	if lb.Informers == nil || lb.Config.Host == "" {
		t.Errorf("client without informers or config: %+v", lb)
	}
}

// TestStopsWithContext: once ctx ends, the client's requests fail instead of reaching routes.
func TestStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	requests := make(chan seen, 1)
	lb := start(ctx, t, namespaceRoutes(requests))
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		reqCtx, done := context.WithTimeout(context.Background(), time.Second)
		_, err := lb.Client.CoreV1().Namespaces().Get(reqCtx, "default", metav1.GetOptions{})
		done()
		if err != nil {
			return
		}
		<-requests
		if time.Now().After(deadline) {
			t.Fatal("the client still reaches the routes after its context ended")
		}
	}
}

func TestPipeListener(t *testing.T) {
	ln := newPipeListener()
	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	c, err := ln.dial(context.Background(), "tcp", "loopback")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
	if ln.Addr().Network() != "pipe" {
		t.Errorf("network %q", ln.Addr().Network())
	}
	_ = ln.Close()
	_ = ln.Close() // closing twice is harmless
	if _, err := ln.Accept(); err == nil {
		t.Error("accept after close succeeded")
	}
	if _, err := ln.dial(context.Background(), "tcp", "loopback"); err == nil {
		t.Error("dial after close succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newPipeListener().dial(ctx, "tcp", "loopback"); err == nil {
		t.Error("dial with an ended context succeeded")
	}
}

// TestRequestsWaitForServe: a request sent before the routes are served is answered once they
// are, so that the client's users can be built first.
func TestRequestsWaitForServe(t *testing.T) {
	lb, err := New()
	if err != nil {
		t.Fatal(err)
	}
	answered := make(chan error, 1)
	go func() {
		_, err := lb.Client.CoreV1().Namespaces().Get(t.Context(), "early", metav1.GetOptions{})
		answered <- err
	}()
	requests := make(chan seen, 1)
	lb.Serve(t.Context(), genericfilters.WithRequestInfo(namespaceRoutes(requests), resolver))
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	if got := <-requests; got.info.Name != "early" {
		t.Errorf("request info %+v", got.info)
	}
}
