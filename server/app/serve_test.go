package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

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

	// Every spelling of a watch the server serves as one ends: the Python client's "True" too.
	go handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api/v1/configmaps?watch=True", nil))
	stop()
	if got := <-ended; got != "/api/v1/configmaps?watch=True cancelled" {
		t.Fatalf("watch: %s", got)
	}
	handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api/v1/configmaps", nil))
	if got := <-ended; got != "/api/v1/configmaps finished" {
		t.Fatalf("list: %s", got)
	}
}
