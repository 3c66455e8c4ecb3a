package endpoints_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sqlkube/sqlkube/server/endpoints"
)

// TestIsWatch: what wraps the server (its shutdown) tells a watch by the rule the server serves
// one by: both forms, every spelling of true.
func TestIsWatch(t *testing.T) {
	for target, want := range map[string]bool{
		"/api/v1/configmaps?watch=true":                    true,
		"/api/v1/configmaps?watch=True":                    true,
		"/api/v1/namespaces/a/configmaps?watch=1":          true,
		"/api/v1/namespaces/a/configmaps?watch=yes":        true,
		"/api/v1/namespaces/a/configmaps?watch":            true,
		"/api/v1/watch/namespaces/a/configmaps":            true,
		"/apis/example.com/v1/watch/widgets":               true,
		"/api/v1/namespaces/a/configmaps?watch=false":      false,
		"/api/v1/namespaces/a/configmaps?watch=FALSE":      false,
		"/api/v1/namespaces/a/configmaps?watch=0":          false,
		"/api/v1/namespaces/watch/configmaps/x":            false,
		"/api/v1/namespaces/a/configmaps?labelSelector=ab": false,
	} {
		if got := endpoints.IsWatch(httptest.NewRequest(http.MethodGet, target, nil)); got != want {
			t.Errorf("IsWatch(%s) = %v, want %v", target, got, want)
		}
	}
}

// TestWatchParameterSpellings: the watch parameter is read as kube-apiserver reads a boolean
// query parameter, so that every client's spelling of true gets a watch stream (the Python
// client sends "True") and every spelling of false a list.
func TestWatchParameterSpellings(t *testing.T) {
	api := sqliteAPI(t)
	const path = "/api/v1/namespaces/default/configmaps?timeoutSeconds=1&"
	for query, wantWatch := range map[string]bool{
		"":                false,
		"watch=0":         false,
		"watch=false":     false,
		"watch=FALSE":     false,
		"watch=False":     false,
		"watch=1":         true,
		"watch=true":      true,
		"watch=True":      true,
		"watch=TRUE":      true,
		"watch=yes":       true,
		"watch=":          true,
		"watch":           true,
		"watch=0&watch=1": false,
		"watch=1&watch=0": true,
	} {
		t.Run(query, func(t *testing.T) {
			t.Parallel()
			body := string(api.do("GET", path+query, "").expect(t, 200).body)
			isList := strings.Contains(body, `"kind":"ConfigMapList"`)
			if isList == wantWatch {
				t.Errorf("?%s: got %q, want a watch: %v", query, body, wantWatch)
			}
		})
	}
}
