package endpoints_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/sqlkube/sqlkube/server/apiserver"
	"github.com/sqlkube/sqlkube/server/endpoints"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// recordingHandler keeps the log records it is given.
type recordingHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r)
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

// requestLines returns the level and status of each "request" record.
func (h *recordingHandler) requestLines() map[int64]slog.Level {
	h.mu.Lock()
	defer h.mu.Unlock()
	lines := map[int64]slog.Level{}
	for _, r := range h.records {
		if r.Message != "request" {
			continue
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "status" {
				lines[a.Value.Int64()] = r.Level
			}
			return true
		})
	}
	return lines
}

func TestRequestLog(t *testing.T) {
	logs := &recordingHandler{}
	api := newTestAPI(t, sqltest.SQLiteDSN(t), apiserver.Options{Options: endpoints.Options{Logger: slog.New(logs), RequestLogLevel: slog.LevelDebug}})
	api.do("GET", cmPath, "").expect(t, http.StatusOK)
	api.do("GET", cmPath+"/missing", "").expect(t, http.StatusNotFound)
	_ = api.store.Close()
	failed := api.do("GET", cmPath, "")
	lines := logs.requestLines()
	want := map[int64]slog.Level{200: slog.LevelDebug, 404: slog.LevelDebug, int64(failed.code): slog.LevelError}
	if failed.code < 500 {
		t.Fatalf("list on a closed store answered %d", failed.code)
	}
	for status, level := range want {
		if got, ok := lines[status]; !ok || got != level {
			t.Errorf("status %d logged at %v (logged: %v), want %v", status, got, ok, level)
		}
	}
}

// A request the client abandoned fails, but that is not a server error: it is logged at debug.
func TestRequestLogClientGone(t *testing.T) {
	logs := &recordingHandler{}
	api := newTestAPI(t, sqltest.SQLiteDSN(t), apiserver.Options{Options: endpoints.Options{Logger: slog.New(logs), RequestLogLevel: slog.LevelDebug}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	api.server.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, "GET", cmPath, nil))
	if rec.Code < 500 {
		t.Fatalf("list with a cancelled context answered %d; the test needs a failure", rec.Code)
	}
	logs.mu.Lock()
	for _, r := range logs.records {
		if r.Level >= slog.LevelError {
			t.Errorf("abandoned request logged at %v: %s", r.Level, r.Message)
		}
	}
	logs.mu.Unlock()
	if got := logs.requestLines()[int64(rec.Code)]; got != slog.LevelDebug {
		t.Errorf("abandoned request's line logged at %v, want debug", got)
	}
}

// A failing health check is an answer, not a server error: /readyz's 500 is logged at the
// request level (every start answers it for a moment).
func TestRequestLogHealthCheck(t *testing.T) {
	logs := &recordingHandler{}
	api := newTestAPI(t, sqltest.SQLiteDSN(t), apiserver.Options{Options: endpoints.Options{Logger: slog.New(logs), RequestLogLevel: slog.LevelDebug}})
	_ = api.store.Close()
	api.do("GET", "/readyz", "").expect(t, http.StatusInternalServerError)
	if got := logs.requestLines()[http.StatusInternalServerError]; got != slog.LevelDebug {
		t.Errorf("/readyz's 500 logged at %v, want debug", got)
	}
}
