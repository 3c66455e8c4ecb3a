package endpoints_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/server/apiserver"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// fuzzCollections are collections of each kind of scope the fuzzer aims at: a namespaced
// built-in (NAMESPACE is the fuzzed segment), a cluster-scoped one, RBAC (whose names are only
// path segments), and namespaces themselves.
var fuzzCollections = []string{
	"/api/v1/namespaces/NAMESPACE/configmaps",
	"/api/v1/namespaces",
	"/apis/rbac.authorization.k8s.io/v1/clusterroles",
	"/apis/rbac.authorization.k8s.io/v1/namespaces/NAMESPACE/rolebindings",
	"/api/v1/configmaps",
}

// fuzzVerbs are the verbs tried on an object or collection path: method and, for writes,
// the content type of a body naming the fuzzed object.
var fuzzVerbs = []struct{ method, contentType string }{
	{http.MethodGet, ""},
	{http.MethodPut, "application/json"},
	{http.MethodPatch, "application/merge-patch+json"},
	{http.MethodPatch, "application/json-patch+json"},
	{http.MethodPatch, "application/apply-patch+yaml"},
	{http.MethodPost, "application/json"},
	{http.MethodDelete, ""},
}

// FuzzPathAndQuery sends requests whose namespace, name and query string are the fuzzer's,
// for every verb, to the real handler on a real database, and fails on any answer of 500 and
// up but the 504 kube-apiserver itself answers for a resourceVersion the store has not reached.
// Input from a client must never be a fault of the server.
func FuzzPathAndQuery(f *testing.F) {
	for _, seed := range pathAndQuerySeeds {
		f.Add(seed.verb, seed.collection, seed.namespace, seed.name, seed.query)
	}
	api := newTestAPI(f, sqltest.SQLiteDSN(f), apiserver.Options{RevisionWait: 50 * time.Millisecond})
	api.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"fuzz"}}`).expect(f, http.StatusCreated)
	f.Fuzz(func(t *testing.T, verb, collection uint8, namespace, name, query string) {
		checkServerFault(t, api.server, fuzzRequest(verb, collection, namespace, name, query))
	})
}

// pathAndQuerySeeds are the inputs that once answered 500, and their neighbours.
var pathAndQuerySeeds = []struct {
	verb, collection       uint8
	namespace, name, query string
}{
	{0, 0, "fuzz", "", "limit=9223372036854775807"},
	{0, 0, "fuzz", "", "limit=9223372036854775806"},
	{0, 0, "fuzz", "", "limit=-1"},
	{0, 4, "", "", "limit=9223372036854775807&continue=x"},
	{0, 0, "fuzz", "a\x00b", ""},
	{0, 0, "a\x00b", "x", ""},
	{0, 0, "\xff\xfe", "\xff\xfe", ""},
	{1, 0, "fuzz", "a\x00b", ""},
	{2, 0, "fuzz", "a\x00b", ""},
	{4, 0, "fuzz", "a\x00b", ""},
	{4, 2, "", "a\x00b", ""},
	{5, 2, "", "", ""},
	{6, 0, "fuzz", "\xff", ""},
	{6, 0, "\xff", "", ""},
	{6, 1, "", "a\x00b", ""},
	{0, 1, "", "a\x00b", ""},
	{0, 0, "fuzz", "%", ""},
	{1, 0, "fuzz", "%", ""},
	{0, 0, "fuzz", "..", ""},
	{0, 0, "fuzz", "", "fieldSelector=metadata.name%3Da%00b"},
	{0, 0, "fuzz", "", "labelSelector=a%3D%FF"},
	{0, 0, "fuzz", "", "fieldSelector=metadata.namespace%3D%00"},
	{0, 4, "", "", "fieldSelector=metadata.namespace%3D%FF"},
	{0, 0, "fuzz", "", "continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJcdTAwMDAifQ"},
	{0, 0, "fuzz", "", "resourceVersion=18446744073709551615"},
	{0, 0, "fuzz", "", "resourceVersion=9223372036854775807&resourceVersionMatch=Exact"},
	{0, 0, "fuzz", "", "watch=1&resourceVersion=9223372036854775807"},
	{0, 0, "fuzz", "", "watch=1&timeoutSeconds=9223372036854775807"},
	{0, 0, "fuzz", "x", "resourceVersion=9223372036854775807"},
	{6, 0, "fuzz", "x", "gracePeriodSeconds=9223372036854775807"},
	{6, 0, "fuzz", "", "gracePeriodSeconds=-9223372036854775808"},
	{1, 0, "fuzz", "x", "fieldManager=" + strings.Repeat("m", 200)},
	{6, 0, "fuzz", "x", "propagationPolicy=%00"},
	{5, 0, "fuzz", "x", "dryRun=%FF"},
}

// fuzzRequest is the request for one input: verb and collection pick from the tables, name
// (when not empty) makes it an object path.
func fuzzRequest(verb, collection uint8, namespace, name, query string) *http.Request {
	v := fuzzVerbs[int(verb)%len(fuzzVerbs)]
	path := strings.Replace(fuzzCollections[int(collection)%len(fuzzCollections)], "NAMESPACE", namespace, 1)
	if name != "" {
		path += "/" + name
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Method = v.method
	req.URL = &url.URL{Path: path, RawQuery: query}
	req.RequestURI = req.URL.RequestURI()
	if v.contentType != "" {
		req.Header.Set("Content-Type", v.contentType)
		req.Body, req.ContentLength = fuzzBody(v.contentType, namespace, name)
	}
	return req
}

// fuzzBody is a body that names the fuzzed object, so that a write gets as far as storage.
func fuzzBody(contentType, namespace, name string) (io.ReadCloser, int64) {
	var body string
	switch contentType {
	case "application/json-patch+json":
		body = `[{"op":"add","path":"/data","value":{"a":"b"}}]`
	default:
		meta, _ := json.Marshal(map[string]string{"name": name, "namespace": namespace})
		body = `{"apiVersion":"v1","kind":"ConfigMap","metadata":` + string(meta) + `}`
	}
	return io.NopCloser(strings.NewReader(body)), int64(len(body))
}

// checkServerFault serves req with a deadline (a watch ends there) and fails on a server fault.
func checkServerFault(t *testing.T, h http.Handler, req *http.Request) {
	t.Helper()
	ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
	defer cancel()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req.WithContext(ctx))
	if rec.Code >= 500 && !tooLargeResourceVersion(rec) {
		t.Fatalf("%s %s?%s: %d %s", req.Method, req.URL.Path, req.URL.RawQuery, rec.Code, rec.Body)
	}
}

// tooLargeResourceVersion is kube-apiserver's 504 for a resourceVersion the store has not reached.
func tooLargeResourceVersion(rec *httptest.ResponseRecorder) bool {
	return rec.Code == http.StatusGatewayTimeout && strings.Contains(rec.Body.String(), "Too large resource version")
}

// TestPathAndQuerySeeds sends the fuzzer's seeds on both backends: PostgreSQL refuses text that
// SQLite takes (NUL, invalid UTF-8), so it is where such input used to become a 500.
func TestPathAndQuerySeeds(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		api.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"fuzz"}}`).expect(t, http.StatusCreated)
		for _, seed := range pathAndQuerySeeds {
			checkServerFault(t, api.server, fuzzRequest(seed.verb, seed.collection, seed.namespace, seed.name, seed.query))
		}
	})
}
