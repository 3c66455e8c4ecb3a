package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestIsWatch(t *testing.T) {
	tests := map[string]bool{
		"/api/v1/configmaps?watch=true":                    true,
		"/api/v1/namespaces/a/configmaps?watch=1":          true,
		"/api/v1/watch/namespaces/a/configmaps":            true,
		"/apis/example.com/v1/watch/widgets":               true,
		"/api/v1/namespaces/a/configmaps?watch=false":      false,
		"/api/v1/namespaces/watch/configmaps/x":            false,
		"/api/v1/namespaces/a/configmaps?labelSelector=ab": false,
	}
	for target, want := range tests {
		if got := isWatch(httptest.NewRequest(http.MethodGet, target, nil)); got != want {
			t.Errorf("isWatch(%s) = %v, want %v", target, got, want)
		}
	}
}

// A watch must end when shutdown starts, while an ordinary request keeps its context.
func TestEndStreamsOnShutdown(t *testing.T) {
	stopping, stop := context.WithCancel(context.Background())
	ended := make(chan string, 2)
	handler := endStreamsOnShutdown(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			ended <- r.URL.RequestURI() + " cancelled"
		case <-time.After(200 * time.Millisecond):
			ended <- r.URL.RequestURI() + " finished"
		}
	}), stopping)

	go handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api/v1/configmaps?watch=true", nil))
	stop()
	if got := <-ended; got != "/api/v1/configmaps?watch=true cancelled" {
		t.Fatalf("watch: %s", got)
	}
	handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api/v1/configmaps", nil))
	if got := <-ended; got != "/api/v1/configmaps finished" {
		t.Fatalf("list: %s", got)
	}
}
