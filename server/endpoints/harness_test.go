package endpoints_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sqlkube/sqlkube/server/apiserver"
	"github.com/sqlkube/sqlkube/server/endpoints"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// testAPI is a Server over a real store, reached through HTTP.
type testAPI struct {
	t      testing.TB
	store  *sqlstore.Store
	server *endpoints.Server
	http   *httptest.Server
}

func newTestAPI(t testing.TB, dsn string, opts apiserver.Options) *testAPI {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	store, err := sqlstore.Open(ctx, sqltest.Database(t, dsn, sqlstore.SQLite, sqlstore.Postgres), sqlstore.Options{})
	if err != nil {
		t.Fatalf("opening store: %v", err)
	}
	// The object rules are tested on exact revisions: no object of the server's own.
	opts.NoDefaultObjects = true
	srv, err := apiserver.New(ctx, store, opts)
	if err != nil {
		t.Fatalf("endpoints.New: %v", err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		cancel()
		_ = store.Close()
	})
	return &testAPI{t: t, store: store, server: srv, http: hs}
}

// backends runs fn against a Server on SQLite and on PostgreSQL.
func backends(t *testing.T, fn func(t *testing.T, api *testAPI)) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		fn(t, newTestAPI(t, dsn, apiserver.Options{RevisionWait: 300 * time.Millisecond}))
	})
}

// sqliteAPI is a Server on SQLite only, for tests about the HTTP layer alone.
func sqliteAPI(t testing.TB) *testAPI {
	return newTestAPI(t, sqltest.SQLiteDSN(t), apiserver.Options{RevisionWait: 300 * time.Millisecond})
}

type response struct {
	code   int
	header http.Header
	body   []byte
}

// do sends a request; headers are "Name: value" strings.
func (a *testAPI) do(method, path, body string, headers ...string) response {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.http.URL+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Set(name, value)
	}
	resp, err := a.http.Client().Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: data}
}

// object decodes a JSON response body.
func (r response) object(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("response is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

// expect fails unless the response has the code.
func (r response) expect(t testing.TB, code int) response {
	t.Helper()
	if r.code != code {
		t.Fatalf("status %d, want %d: %s", r.code, code, r.body)
	}
	return r
}

// expectStatus fails unless the response is the Status, compared field by field.
func (r response) expectStatus(t testing.TB, want metav1.Status) {
	t.Helper()
	code := int(want.Code)
	if code == 0 { // a Success Status carries no code
		code = http.StatusOK
	}
	r.expect(t, code)
	var got metav1.Status
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatalf("not a Status: %v: %s", err, r.body)
	}
	want.Kind, want.APIVersion = "Status", "v1"
	if want.Status == "" {
		want.Status = metav1.StatusFailure
	}
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(got)
	if !bytes.Equal(wantJSON, gotJSON) {
		t.Fatalf("Status\n got %s\nwant %s", gotJSON, wantJSON)
	}
}

// plainNotFound is the body of net/http's 404, kube-apiserver's answer for a path that names
// nothing.
const plainNotFound = "404 page not found\n"

// expectPathNotFound fails unless the response is net/http's plain-text 404.
func (r response) expectPathNotFound(t testing.TB) {
	t.Helper()
	r.expect(t, http.StatusNotFound)
	if ct := r.header.Get("Content-Type"); ct != "text/plain; charset=utf-8" || string(r.body) != plainNotFound {
		t.Fatalf("404 %q %q, want net/http's plain-text 404", ct, r.body)
	}
}

// nested reads a nested field of a decoded object.
func nested(m map[string]any, path ...string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

func str(m map[string]any, path ...string) string {
	s, _ := nested(m, path...).(string)
	return s
}

func typesUID(s string) types.UID { return types.UID(s) }

// serveForTest serves srv, on store, over HTTP until the test ends.
func serveForTest(t *testing.T, store *sqlstore.Store, srv *endpoints.Server) *testAPI {
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &testAPI{t: t, store: store, server: srv, http: hs}
}
