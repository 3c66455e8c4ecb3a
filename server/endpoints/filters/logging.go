package filters

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"k8s.io/apiserver/pkg/audit"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// statusRecorder remembers the status code a handler answered with, for the request log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Flush lets streaming handlers (watch) push bytes through the recorder.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection behind the recorder.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// requestLogEntry is what the request log knows of a request beyond its URL and answer: filters
// inside the log's fill it in (the user is only known after authentication).
type requestLogEntry struct {
	user string
}

type requestLogKey struct{}

// withLogging logs one structured line per request (verb, path, user, status, latency, audit
// ID): at the server's request log level for answers below 500 and for requests the client
// abandoned, at error for the rest.
func withLogging(next http.Handler, c Config) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		entry := &requestLogEntry{}
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), requestLogKey{}, entry)))
		level := c.RequestLogLevel
		if rec.status >= 500 && !ClientGone(r) && !isHealthCheck(r.URL.Path) {
			level = slog.LevelError
		}
		if !c.Log.Enabled(r.Context(), level) {
			return
		}
		verb := r.Method
		if info, ok := genericrequest.RequestInfoFrom(r.Context()); ok {
			verb = info.Verb
		}
		c.Log.LogAttrs(r.Context(), level, "request", slog.String("verb", verb), slog.String("path", r.URL.Path),
			slog.String("user", entry.user), slog.Int("status", rec.status), slog.Duration("latency", time.Since(start)),
			slog.String("auditID", audit.GetAuditIDTruncated(r.Context())))
	})
}

// isHealthCheck reports whether path is one of the health endpoints, whose 500 says a check
// has not passed (yet: every start answers /readyz 500 for a moment), which is an answer rather
// than the server's error; kube-apiserver logs it at info too.
func isHealthCheck(path string) bool {
	for _, endpoint := range []string{"/readyz", "/livez", "/healthz"} {
		if rest, ok := strings.CutPrefix(path, endpoint); ok && (rest == "" || rest[0] == '/') {
			return true
		}
	}
	return false
}

// withLoggedUser tells the request log who the authenticated user is.
func withLoggedUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entry, _ := r.Context().Value(requestLogKey{}).(*requestLogEntry)
		if u, ok := genericrequest.UserFrom(r.Context()); ok && entry != nil {
			entry.user = u.GetName()
		}
		next.ServeHTTP(w, r)
	})
}

// ClientGone reports whether the client closed the request before it was answered: a failure
// that follows is the client's doing, not a server error worth an error log.
func ClientGone(r *http.Request) bool {
	return r.Context().Err() != nil
}
