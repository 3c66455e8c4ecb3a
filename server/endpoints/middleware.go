package endpoints

import (
	"context"
	"errors"
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
func (s *Server) withLogging(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		entry := &requestLogEntry{}
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), requestLogKey{}, entry)))
		level := s.opts.RequestLogLevel
		if rec.status >= 500 && !clientGone(r) && !isHealthCheck(r.URL.Path) {
			level = slog.LevelError
		}
		if !s.log.Enabled(r.Context(), level) {
			return
		}
		verb := r.Method
		if info, ok := genericrequest.RequestInfoFrom(r.Context()); ok {
			verb = info.Verb
		}
		s.log.LogAttrs(r.Context(), level, "request", slog.String("verb", verb), slog.String("path", r.URL.Path),
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

// errPanicked is the answer to a request whose handler panicked. It says no more, as
// kube-apiserver: the panic's value and stack (which the request timeout filter adds) are for the
// log, not for the client.
var errPanicked = errors.New("this request caused sqlkube to panic; look in the logs for details")

// withRecovery turns a panic into a logged 500 Status instead of a dropped connection. A handler
// that already started streaming aborts with http.ErrAbortHandler, which is passed through so
// the client sees a broken response rather than a truncated but well-formed one.
func (s *Server) withRecovery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", v,
				"auditID", audit.GetAuditIDTruncated(r.Context()))
			s.writeError(w, r, errPanicked)
		}()
		next.ServeHTTP(w, r)
	})
}

// clientGone reports whether the client closed the request before it was answered: a failure
// that follows is the client's doing, not a server error worth an error log.
func clientGone(r *http.Request) bool {
	return r.Context().Err() != nil
}
