package server_test

import (
	"strings"
	"testing"
)

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
