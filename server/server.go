// Package server is the HTTP layer: it serves the Kubernetes REST API for storing and watching
// objects. It routes a request, resolves what it is about, decodes it, calls the registry and
// encodes the answer (content negotiation, lists and watches streamed, Status errors); it
// decides no object rule itself. New also assembles what it serves: the catalog of types, the
// registry and the in-process controllers, on top of a Storage it owns the definition of.
package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/sqlkube/sqlkube/server/auditlog"
	"github.com/sqlkube/sqlkube/server/controllers/perns"
	rbaccontroller "github.com/sqlkube/sqlkube/server/controllers/rbac"
	"github.com/sqlkube/sqlkube/server/loopback"
	"github.com/sqlkube/sqlkube/server/rbac"
	"github.com/sqlkube/sqlkube/server/reviews"
	"github.com/sqlkube/sqlkube/server/serviceaccount/tokenrequest"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"

	"github.com/gorilla/mux"

	"github.com/sqlkube/sqlkube/server/admission"
	"github.com/sqlkube/sqlkube/server/catalog"
	"github.com/sqlkube/sqlkube/server/controllers"
	"github.com/sqlkube/sqlkube/server/controllers/crdcleanup"
	fcbootstrap "github.com/sqlkube/sqlkube/server/controllers/flowcontrol"
	"github.com/sqlkube/sqlkube/server/controllers/gc"
	"github.com/sqlkube/sqlkube/server/controllers/namespace"
	"github.com/sqlkube/sqlkube/server/discovery"
	"github.com/sqlkube/sqlkube/server/metrics"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// Storage is what the server needs from the database layer. *sqlstore.Store implements it.
type Storage interface {
	Write(ctx context.Context, w sqlstore.Write) (sqlstore.Object, error)
	Get(ctx context.Context, key sqlstore.Key) (sqlstore.Object, error)
	CurrentRevision(ctx context.Context) (int64, error)
	CompactedRevision(ctx context.Context) (int64, error)
	List(ctx context.Context, opts sqlstore.ListOptions, each func(sqlstore.Object) error) (sqlstore.ListResult, error)
	Watch(ctx context.Context, opts sqlstore.WatchOptions) (*sqlstore.Watcher, error)
	Ready(ctx context.Context) error
}

// The store this package is run on implements Storage.
var _ Storage = (*sqlstore.Store)(nil)

// Options configure a Server.
type Options struct {
	Logger *slog.Logger
	// WatchBookmarkInterval is how often a watch that asked for bookmarks gets one.
	WatchBookmarkInterval time.Duration
	// MaxRequestBodyBytes bounds request bodies; 0 picks kube-apiserver's 3 MiB.
	MaxRequestBodyBytes int64
	// NoDefaultObjects: the server writes no objects of its own beyond the initial namespaces
	// (no bootstrap RBAC policy, default ServiceAccounts or root CA ConfigMaps), for tests that
	// count revisions and objects.
	NoDefaultObjects bool
	// Security is how requests are authenticated and authorized; nil treats every request as an
	// admin, which only --plain-http development serving should do.
	Security *Security
	// RevisionWait bounds how long a read asking for a revision newer than the store's current
	// one waits for it before answering 504; 0 picks kube-apiserver's 3 s.
	RevisionWait time.Duration
	// Audit records requests in an audit log (--audit-policy-file and its backends).
	Audit auditlog.Config
	// Limits protect the server against overload; nil applies kube-apiserver's defaults.
	Limits *Limits
	// RequestLogLevel is the level of the line logged for each request answered below 500
	// (those at 500 and above are errors).
	RequestLogLevel slog.Level
	// Profiling serves Go's profiles at /debug/pprof/ to users authorized for that path.
	Profiling bool
	// Admission configures the admission chain (webhooks and policies).
	Admission admission.Options
}

// Server is the HTTP API.
type Server struct {
	store     Storage
	opts      Options
	log       *slog.Logger
	catalog   *catalog.Catalog
	registry  *registry.Registry
	discovery *discovery.Cache
	handler   http.Handler
	// rbac is the RBAC authorizer, which rbacController keeps current.
	rbac           *rbac.Authorizer
	rbacController *rbaccontroller.Controller
	// authorizer decides requests; admission's plugins ask it too.
	authorizer authorizer.Authorizer
	// escalation refuses RBAC writes granting more than the writer holds; its Authorizer is
	// the server's, set with it.
	escalation *rbac.Escalation
	// admission is the registry's admission step.
	admission *admission.Chain
	// reviews answers the access and authentication reviews.
	reviews *reviews.Reviewer
	// tokens issues ServiceAccount tokens; nil when the server issues none.
	tokens *tokenrequest.Issuing
	limits Limits
	// flowControl is priority and fairness, nil when off; flowControlSynced tells when it has
	// read its configuration, which flowControlBootstrap writes.
	flowControl          utilflowcontrol.Interface
	flowControlSynced    func() bool
	flowControlBootstrap *fcbootstrap.Bootstrap
	// shuttingDown fails /readyz once the server is asked to stop.
	shuttingDown atomic.Bool
}

const defaultMaxRequestBodyBytes = 3 << 20

// StoreMark is the sqlstore.Options.Mark of a store the server runs on: it marks the objects
// the garbage collector lists at start (ownerReferences, deletionTimestamp), so that a start on
// a million other objects reads none of them.
var StoreMark = gc.MayConcernCollector

// New builds a Server on store. It makes sure the initial namespaces exist and loads the CRDs
// already stored, so that their types are served from the first request. The namespace cache,
// the namespace controller and the garbage collector run until ctx ends.
func New(ctx context.Context, store Storage, opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxRequestBodyBytes <= 0 {
		opts.MaxRequestBodyBytes = defaultMaxRequestBodyBytes
	}
	// CRD conversion webhooks are called as admission webhooks are: same service resolution,
	// no client credentials.
	converters, err := conversion.NewCRConverterFactory(admission.WebhookServiceResolver(opts.Admission.WebhookServices), admission.WebhookAuthentication())
	if err != nil {
		return nil, err
	}
	types, err := catalog.New(ctx, store, converters, opts.Logger)
	if err != nil {
		return nil, err
	}
	namespaces, ok := types.Lookup("", "v1", "namespaces")
	if !ok {
		return nil, errors.New("the catalog serves no namespaces")
	}
	rbacAuthorizer := rbac.NewAuthorizer()
	escalation := &rbac.Escalation{RBAC: rbacAuthorizer}
	admissionChain := admission.New(opts.Admission, types, escalation, opts.Logger)
	objects, err := registry.New(ctx, store, namespaces, registry.Options{Logger: opts.Logger, RevisionWait: opts.RevisionWait, Admission: admissionChain,
		WatchBookmarkInterval: opts.WatchBookmarkInterval})
	if err != nil {
		return nil, err
	}
	s := &Server{store: store, opts: opts, log: opts.Logger, catalog: types, registry: objects, discovery: discovery.NewCache(types),
		rbac: rbacAuthorizer, escalation: escalation, admission: admissionChain, limits: DefaultLimits()}
	if opts.Limits != nil {
		s.limits = *opts.Limits
	}
	deps := controllers.Deps{Store: store, Registry: objects, Catalog: types, Log: opts.Logger}
	if s.rbacController, err = s.startControllers(ctx, deps, namespaces); err != nil {
		return nil, err
	}
	// The filters set up TokenRequest, which the routes serve.
	guard, err := s.authFilters()
	if err != nil {
		return nil, err
	}
	routes := s.routes()
	lb, err := loopback.Start(ctx, routes, requestInfoResolver)
	if err != nil {
		return nil, err
	}
	if s.limits.PriorityAndFairness {
		s.startPriorityAndFairness(ctx, deps, lb)
	} else {
		genericfilters.StartMaxInFlightWatermarkMaintenance(ctx.Done())
	}
	if err := s.admission.Start(ctx, lb.Config, s.authorizer); err != nil {
		return nil, err
	}
	metrics.Start(ctx, s.store, s.catalog)
	// Outermost, as in kube-apiserver: every answer carries an Audit-Id header, audited or not.
	s.handler = withGrownStack(genericapifilters.WithAuditInit(s.withRecovery(guard(metrics.WithRequests(genericapifilters.WithWarningRecorder(routes), longRunning)))), growStackTo16KiB)
	return s, nil
}

// startControllers runs, until ctx ends, the controllers kube-controller-manager would run for
// deletion to behave as on a cluster (the namespace controller and the garbage collector), the
// RBAC controller, which feeds the RBAC authorizer, and those that keep a default
// ServiceAccount and the root CA bundle in every namespace.
func (s *Server) startControllers(ctx context.Context, deps controllers.Deps, namespaces *resource.Resource) (*rbaccontroller.Controller, error) {
	rbacController, err := rbaccontroller.New(deps, s.rbac)
	if err != nil {
		return nil, err
	}
	crdCleanup, err := crdcleanup.New(deps)
	if err != nil {
		return nil, err
	}
	go crdCleanup.Run(ctx)
	go namespace.Run(ctx, deps, namespaces)
	go gc.Run(ctx, deps)
	go rbacController.Run(ctx, !s.opts.NoDefaultObjects)
	if !s.opts.NoDefaultObjects {
		for _, obj := range s.perNamespaceObjects() {
			go perns.Run(ctx, deps, namespaces, obj)
		}
	}
	return rbacController, nil
}

// rootCADescription is the annotation kube-controller-manager puts on kube-root-ca.crt.
const rootCADescription = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."

// perNamespaceObjects are what every namespace holds: a default ServiceAccount, and the CA
// bundle clients verify the server with, when the server knows it.
func (s *Server) perNamespaceObjects() []perns.Object {
	var objs []perns.Object
	if sa, ok := s.catalog.Lookup("", "v1", "serviceaccounts"); ok {
		objs = append(objs, perns.Object{Resource: sa, Name: "default"})
	}
	cm, ok := s.catalog.Lookup("", "v1", "configmaps")
	if sec := s.opts.Security; ok && sec != nil && len(sec.RootCA) > 0 {
		objs = append(objs, perns.Object{Resource: cm, Name: "kube-root-ca.crt",
			Content:     map[string]any{"data": map[string]any{"ca.crt": string(sec.RootCA)}},
			Annotations: map[string]string{"kubernetes.io/description": rootCADescription}})
	}
	return objs
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// routes maps the URL space: health checks, then the API paths, parsed as kube-apiserver's
// request-info resolver parses them.
func (s *Server) routes() http.Handler {
	// Paths are taken as sent, as kube-apiserver takes them: "." and ".." are names its storage
	// refuses (400), not steps to redirect to another object's path.
	m := mux.NewRouter().SkipClean(true)
	s.routeHealth(m)
	m.Handle("/metrics", metrics.Handler())
	if s.opts.Profiling {
		routeProfiling(m)
	}
	s.routeDiscovery(m)
	s.routeReviews(m)
	s.routeServiceAccountTokens(m)
	m.PathPrefix("/api/v1/").HandlerFunc(s.serveCoreAPI)
	m.PathPrefix("/apis/{group}/{version}/").HandlerFunc(s.serveGroupAPI)
	m.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errNotFoundPath())
	})
	return m
}
