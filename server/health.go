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
	ready := append(alive[:len(alive):len(alive)], s.startupChecks()...)
	healthz.InstallLivezHandler(mx, alive...)
	healthz.InstallHandler(mx, ready...)
	healthz.InstallReadyzHandler(mx, append(ready, healthz.NamedCheck("shutdown", s.shutdownCheck))...)
}

// databaseCheck fails while the database does not answer, so that a load balancer stops sending
// requests to a replica that lost it.
func (s *Server) databaseCheck() healthz.HealthChecker {
	return healthz.NamedCheck("database", func(r *http.Request) error { return s.store.Ready(r.Context()) })
}

// startupChecks fail until what the server starts with is in place: the RBAC authorizer and
// priority and fairness have read their objects, and the bootstrap RBAC policy and flow-control
// configuration are written.
func (s *Server) startupChecks() []healthz.HealthChecker {
	var synced []func() bool
	var checks []healthz.HealthChecker
	if s.opts.Security != nil {
		synced = append(synced, s.rbacController.Synced)
		checks = append(checks, doneCheck("poststarthook/rbac/bootstrap-roles", s.rbacController.Bootstrapped))
	}
	if s.flowControl != nil {
		synced = append(synced, s.flowControlSynced)
		checks = append(checks, doneCheck("poststarthook/apiserver/bootstrap-system-flowcontrol-configuration", s.flowControlBootstrap.Done))
	}
	informersSynced := func() bool {
		for _, ok := range synced {
			if !ok() {
				return false
			}
		}
		return true
	}
	return append([]healthz.HealthChecker{doneCheck("informer-sync", informersSynced)}, checks...)
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
