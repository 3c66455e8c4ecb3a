package server

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
	alive := []healthz.HealthChecker{healthz.PingHealthz, healthz.LogHealthz, s.databaseCheck()}
	started := append(alive[:len(alive):len(alive)], s.postStartChecks()...)
	healthz.InstallLivezHandler(mx, alive...)
	healthz.InstallHandler(mx, started...)
	healthz.InstallReadyzHandler(mx, append(started, s.informerSyncCheck(), healthz.NamedCheck("shutdown", s.shutdownCheck))...)
}

// databaseCheck fails while the database does not answer, so that a load balancer stops sending
// requests to a replica that lost it.
func (s *Server) databaseCheck() healthz.HealthChecker {
	return healthz.NamedCheck("database", func(r *http.Request) error { return s.store.Ready(r.Context()) })
}

// postStartChecks fail until what the server writes at start is written: the bootstrap RBAC
// policy and flow-control configuration.
func (s *Server) postStartChecks() []healthz.HealthChecker {
	var checks []healthz.HealthChecker
	if s.opts.Security != nil {
		checks = append(checks, doneCheck("poststarthook/rbac/bootstrap-roles", s.rbacController.Bootstrapped))
	}
	if s.limits.PriorityAndFairness { // started after the routes are made: look it up when asked
		checks = append(checks, doneCheck("poststarthook/apiserver/bootstrap-system-flowcontrol-configuration",
			func() bool { return s.flowControlBootstrap.Done() }))
	}
	return checks
}

// informerSyncCheck fails until the RBAC authorizer, priority and fairness and the admission
// chain have read their objects: until then they may refuse or misclassify requests.
func (s *Server) informerSyncCheck() healthz.HealthChecker {
	return doneCheck("informer-sync", func() bool {
		rbacSynced := s.opts.Security == nil || s.rbacController.Synced()
		return rbacSynced && (s.flowControl == nil || s.flowControlSynced()) && s.admission.Synced()
	})
}

// doneCheck is the check name, failing until done.
func doneCheck(name string, done func() bool) healthz.HealthChecker {
	return healthz.NamedCheck(name, func(*http.Request) error {
		if !done() {
			return errNotFinished
		}
		return nil
	})
}

var errNotFinished = errors.New("not finished")

// BeginShutdown makes /readyz fail from now on, as kube-apiserver's shutdown check does once it
// is asked to stop: load balancers take the server out of rotation while it still serves.
func (s *Server) BeginShutdown() { s.shuttingDown.Store(true) }

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
