package endpoints

import (
	"errors"
	"net/http"
	"net/http/pprof"

	"github.com/gorilla/mux"
	"k8s.io/apiserver/pkg/server/healthz"
)

// routeHealth serves kube-apiserver's health endpoints with its named checks and formats:
// /livez, /readyz and /healthz answer "ok", or list each check ([+]name ok, [-]name failed)
// with ?verbose or when one fails; /readyz/NAME answers one check; ?exclude=NAME skips one.
func (s *Server) routeHealth(m *mux.Router) {
	mx := gorillaHealthMux{m}
	checks := s.api.Checks
	alive := append([]healthz.HealthChecker{healthz.PingHealthz, healthz.LogHealthz}, checks.Live...)
	started := append(alive[:len(alive):len(alive)], checks.Started...)
	healthz.InstallLivezHandler(mx, alive...)
	healthz.InstallHandler(mx, started...)
	healthz.InstallReadyzHandler(mx, append(append(started, checks.Ready...), healthz.NamedCheck("shutdown", s.shutdownCheck))...)
}

// BeginShutdown makes /readyz fail from now on, as kube-apiserver's shutdown check does once it
// is asked to stop: load balancers take the server out of rotation while it still serves. The
// first call also runs the hooks given to OnShutdown.
func (s *Server) BeginShutdown() {
	if s.shuttingDown.Swap(true) {
		return
	}
	for _, hook := range s.onShutdown {
		hook()
	}
}

// OnShutdown adds a hook for BeginShutdown to run (kube-apiserver's pre-shutdown hooks), while
// the store is still open. Call it while assembling the server, before it serves.
func (s *Server) OnShutdown(hook func()) { s.onShutdown = append(s.onShutdown, hook) }

var errShuttingDown = errors.New("process is shutting down")

func (s *Server) shutdownCheck(*http.Request) error {
	if s.shuttingDown.Load() {
		return errShuttingDown
	}
	return nil
}

// gorillaHealthMux lets kube's health handlers register their exact paths on a gorilla router.
type gorillaHealthMux struct{ r *mux.Router }

func (m gorillaHealthMux) Handle(path string, h http.Handler) { m.r.Handle(path, h) }

// routeProfiling serves Go's profiles under /debug/pprof/ (--profiling), which the authorizer
// guards like any other non-resource path: only users granted it (cluster-admin) reach it.
func routeProfiling(m *mux.Router) {
	m.HandleFunc("/debug/pprof/profile", pprof.Profile)
	m.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	m.HandleFunc("/debug/pprof/trace", pprof.Trace)
	m.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	m.PathPrefix("/debug/pprof/").HandlerFunc(pprof.Index)
	m.Handle("/debug/pprof", http.RedirectHandler("/debug/pprof/", http.StatusFound))
}
