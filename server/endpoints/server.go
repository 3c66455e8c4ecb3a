// Package endpoints is the HTTP layer: it serves the Kubernetes REST API for storing and watching
// objects. It routes a request, resolves what it is about, decodes it, calls the registry and
// encodes the answer (content negotiation, lists and watches streamed, Status errors); it
// decides no object rule itself. What it serves (the catalog of types, the registry, the
// authenticator and authorizer, the reviews, priority and fairness) is built by server/apiserver
// and handed to New.
package endpoints

import (
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/sqlkube/sqlkube/server/auditlog"
	"github.com/sqlkube/sqlkube/server/auth"
	"github.com/sqlkube/sqlkube/server/endpoints/filters"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/server/healthz"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"

	"github.com/gorilla/mux"

	"github.com/sqlkube/sqlkube/server/metrics"
)

// Options configure the HTTP layer.
type Options struct {
	Logger *slog.Logger
	// MaxRequestBodyBytes bounds request bodies; 0 picks kube-apiserver's 3 MiB.
	MaxRequestBodyBytes int64
	// Audit records requests in an audit log (--audit-policy-file and its backends).
	Audit auditlog.Config
	// Limits protect the server against overload; nil applies kube-apiserver's defaults.
	Limits *filters.Limits
	// RequestLogLevel is the level of the line logged for each request answered below 500
	// (those at 500 and above are errors).
	RequestLogLevel slog.Level
	// Profiling serves Go's profiles at /debug/pprof/ to users authorized for that path.
	Profiling bool
}

// EffectiveLimits are the limits the server applies: Limits, or kube-apiserver's defaults.
func (o Options) EffectiveLimits() filters.Limits {
	if o.Limits != nil {
		return *o.Limits
	}
	return filters.DefaultLimits()
}

// API is what the HTTP layer serves, assembled by server/apiserver.
type API struct {
	// Catalog resolves a request's path to the resource it names.
	Catalog Types
	// Registry applies the object rules and reads and writes storage.
	Registry Objects
	// Discovery holds the discovery and OpenAPI documents.
	Discovery Documents
	// Authenticator and Audiences authenticate requests; Authorizer decides them. All three nil
	// serve every request as an unsecured admin (--plain-http development serving).
	Authenticator authenticator.Request
	Audiences     authenticator.Audiences
	Authorizer    authorizer.Authorizer
	// Documents are fixed documents served at their paths (the ServiceAccount issuer's
	// discovery document and keys).
	Documents []Document
	// FlowControl is priority and fairness; nil applies the two plain in-flight limits.
	FlowControl utilflowcontrol.Interface
	// Checks are the health checks beyond the server's own.
	Checks Checks
}

// Document is a fixed document the server answers GET of Path with.
type Document struct {
	Path, ContentType string
	Body              []byte
}

// Checks are health checks, by the endpoints that run them: /livez runs Live; /healthz also
// Started; /readyz also Ready (and fails once shutdown begins).
type Checks struct {
	Live, Started, Ready []healthz.HealthChecker
}

// Server is the HTTP API.
type Server struct {
	api     API
	opts    Options
	log     *slog.Logger
	limits  filters.Limits
	handler http.Handler
	// routes are the API's routes without the filter chain, for the in-process client.
	routes http.Handler
	// shuttingDown fails /readyz once the server is asked to stop; onShutdown are run then.
	shuttingDown atomic.Bool
	onShutdown   []func()
}

const defaultMaxRequestBodyBytes = 3 << 20

// New builds the HTTP API serving api: its routes and kube-apiserver's filter chain around
// them.
func New(api API, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxRequestBodyBytes <= 0 {
		opts.MaxRequestBodyBytes = defaultMaxRequestBodyBytes
	}
	if api.Authorizer == nil {
		api.Authenticator, api.Authorizer = auth.Unsecured, authorizerfactory.NewAlwaysAllowAuthorizer()
	}
	s := &Server{api: api, opts: opts, log: opts.Logger, limits: opts.EffectiveLimits()}
	s.routes = s.route()
	// Outermost, as in kube-apiserver: every answer carries an Audit-Id header, audited or not.
	s.handler = filters.WithGrownStack(genericapifilters.WithAuditInit(s.withRecovery(filters.Chain(metrics.WithRequests(genericapifilters.WithWarningRecorder(s.routes), filters.LongRunning), s.filterConfig()))), filters.GrowStackTo16KiB)
	return s
}

// InProcess serves the in-process client (server/loopback): the routes, with the request's
// information resolved, without the filter chain.
func (s *Server) InProcess() http.Handler {
	return genericapifilters.WithRequestInfo(s.routes, filters.RequestInfoResolver)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// routes maps the URL space: the API paths, parsed as kube-apiserver's request-info resolver
// parses them, then discovery, the health checks and the rest.
func (s *Server) route() http.Handler {
	// Paths are taken as sent, as kube-apiserver takes them: "." and ".." are names its storage
	// refuses (400), not steps to redirect to another object's path.
	m := mux.NewRouter().SkipClean(true)
	// The router tries its routes in turn, a regular expression each, so the objects' paths
	// that most requests are for come first. The routes after them
	// match none of their paths: their order among themselves is free.
	m.PathPrefix("/api/v1/").HandlerFunc(s.serveCoreAPI)
	m.PathPrefix("/apis/{group}/{version}/").HandlerFunc(s.serveGroupAPI)
	for _, doc := range s.api.Documents {
		m.Path(doc.Path).HandlerFunc(s.onlyGet(serveBytes(doc.Body, doc.ContentType)))
	}
	s.routeDiscovery(m)
	s.routeHealth(m)
	m.Handle("/metrics", metrics.Handler())
	if s.opts.Profiling {
		routeProfiling(m)
	}
	m.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errNotFoundPath())
	})
	return m
}

func serveBytes(body []byte, contentType string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(body)
	}
}

// filterConfig is what the filter chain needs of the server.
func (s *Server) filterConfig() filters.Config {
	return filters.Config{
		Log: s.log, RequestLogLevel: s.opts.RequestLogLevel, Audit: s.opts.Audit, Limits: s.limits,
		Authenticator: s.api.Authenticator, Audiences: s.api.Audiences, Authorizer: s.api.Authorizer, FlowControl: s.api.FlowControl,
	}
}
