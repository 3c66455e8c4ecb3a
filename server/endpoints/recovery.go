package endpoints

import (
	"errors"
	"net/http"

	"k8s.io/apiserver/pkg/audit"
)

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
