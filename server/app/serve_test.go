package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/sqlstore"
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

// --db picks the dialect of the store; a DSN that names no database is refused with what is accepted.
func TestDatabase(t *testing.T) {
	for dsn, want := range map[string]sqlstore.Database{
		"sqlite://./sqlkube.db":                 sqlstore.SQLite("./sqlkube.db"),
		"sqlite:///var/lib/x.db":                sqlstore.SQLite("/var/lib/x.db"),
		"postgres://postgres@db:5432/kube":      sqlstore.Postgres("postgres://postgres@db:5432/kube"),
		"postgresql://u@db/kube?sslmode=verify": sqlstore.Postgres("postgresql://u@db/kube?sslmode=verify"),
	} {
		if got, err := Database(dsn); err != nil || got != want {
			t.Errorf("Database(%q) = %+v, %v; want %+v", dsn, got, err, want)
		}
	}
	for dsn, want := range map[string]string{
		"mysql://localhost/db":  `unsupported database scheme "mysql": accepted schemes are sqlite://, postgres:// and postgresql://`,
		"./sqlkube.db":          `invalid database DSN "./sqlkube.db": expected sqlite://PATH, postgres://... or postgresql://...`,
		"sqlite://":             `invalid SQLite DSN "sqlite://": expected sqlite://PATH`,
		"sqlite://x.db?mode=ro": `invalid SQLite DSN "sqlite://x.db?mode=ro": the path may not contain '?' or '#'`,
	} {
		if _, err := Database(dsn); err == nil || err.Error() != want {
			t.Errorf("Database(%q): %v; want %s", dsn, err, want)
		}
	}
}
