// Package apiserver assembles sqlkube's API server on a store: the catalog of served types, the
// registry and its admission chain, the in-process controllers, authentication and
// authorization, the reviews and ServiceAccount tokens, priority and fairness, metrics, and the
// HTTP layer that serves them. New is the whole program's wiring, in the order it is built.
package apiserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sqlkube/sqlkube/server/endpoints/filters"

	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/apiserver/pkg/server/healthz"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"

	"github.com/sqlkube/sqlkube/server/admission"
	"github.com/sqlkube/sqlkube/server/auth"
	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/catalog"
	"github.com/sqlkube/sqlkube/server/controllers"
	"github.com/sqlkube/sqlkube/server/controllers/apiservices"
	"github.com/sqlkube/sqlkube/server/controllers/crdcleanup"
	fcbootstrap "github.com/sqlkube/sqlkube/server/controllers/flowcontrol"
	"github.com/sqlkube/sqlkube/server/controllers/gc"
	"github.com/sqlkube/sqlkube/server/controllers/namespace"
	"github.com/sqlkube/sqlkube/server/controllers/perns"
	"github.com/sqlkube/sqlkube/server/controllers/priorityclasses"
	rbaccontroller "github.com/sqlkube/sqlkube/server/controllers/rbac"
	"github.com/sqlkube/sqlkube/server/discovery"
	"github.com/sqlkube/sqlkube/server/endpoints"
	"github.com/sqlkube/sqlkube/server/loopback"
	"github.com/sqlkube/sqlkube/server/metrics"
	"github.com/sqlkube/sqlkube/server/pods"
	"github.com/sqlkube/sqlkube/server/rbac"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/server/reviews"
	"github.com/sqlkube/sqlkube/server/serviceaccount"
	"github.com/sqlkube/sqlkube/server/serviceaccount/tokenrequest"
	"github.com/sqlkube/sqlkube/server/services"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// Storage is what the server is built on: what the catalog, the registry, the controllers and
// the metrics read and write, and the database's readiness. *sqlstore.Store implements it.
type Storage interface {
	Write(ctx context.Context, w sqlstore.Write) (sqlstore.Object, error)
	Get(ctx context.Context, key sqlstore.Key) (sqlstore.Object, error)
	CurrentRevision(ctx context.Context) (int64, error)
	CompactedRevision(ctx context.Context) (int64, error)
	List(ctx context.Context, opts sqlstore.ListOptions, each func(sqlstore.Object) error) (sqlstore.ListResult, error)
	Watch(ctx context.Context, opts sqlstore.WatchOptions) (*sqlstore.Watcher, error)
	Ready(ctx context.Context) error
}

var _ Storage = (*sqlstore.Store)(nil)

// StoreMark is the sqlstore.Options.Mark of a store the server runs on: it marks the objects
// the garbage collector lists at start (ownerReferences, deletionTimestamp), so that a start on
// a million other objects reads none of them.
var StoreMark = gc.MayConcernCollector

// Options configure the server.
type Options struct {
	// Options configure the HTTP layer.
	endpoints.Options
	// WatchBookmarkInterval is how often a watch that asked for bookmarks gets one.
	WatchBookmarkInterval time.Duration
	// NoDefaultObjects: the server writes no objects of its own beyond the initial namespaces
	// (no bootstrap RBAC policy, flow-control configuration, default ServiceAccounts or root CA
	// ConfigMaps), for tests that count revisions and objects.
	NoDefaultObjects bool
	// Security is how requests are authenticated and authorized; nil treats every request as an
	// admin, which only --plain-http development serving should do.
	Security *Security
	// RevisionWait bounds how long a read asking for a revision newer than the store's current
	// one waits for it before answering 504; 0 picks kube-apiserver's 3 s.
	RevisionWait time.Duration
	// Admission configures the admission chain (webhooks and policies).
	Admission admission.Options
	// Services are the Service IP and port ranges and the address the kubernetes Service
	// points at.
	Services services.Options
	// Controllers are which of kube-controller-manager's controllers the server runs itself
	// (--controllers); nil runs them all.
	Controllers controllers.Selection
	// Started, if set, is called once, when the start has finished: what the server writes and
	// builds at start is written and built, and /readyz passes.
	Started func()
}

// Security is how a server authenticates and authorizes requests, from kube-apiserver's flags.
type Security struct {
	Authentication auth.Authentication
	// AuthorizationModes are the authorizers, in order (--authorization-mode).
	AuthorizationModes []string
	// APIAudiences are the audiences a bearer token must be meant for (--api-audiences); the
	// ServiceAccount issuer when empty.
	APIAudiences authenticator.Audiences
	// RootCA is the CA bundle that verifies the serving certificate, published in every
	// namespace as the kube-root-ca.crt ConfigMap; nil when unknown.
	RootCA []byte
	// ServiceAccounts issues and verifies ServiceAccount tokens; nil for neither.
	ServiceAccounts *tokenrequest.ServiceAccounts
}

// New builds the server on store and starts, until ctx ends, what runs beside the requests:
// the controllers, the admission plugins' and priority and fairness' informers, the metrics.
// The initial namespaces exist and the stored CRDs are served when it returns.
func New(ctx context.Context, store Storage, opts Options) (*endpoints.Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	log := opts.Logger
	// CRD conversion webhooks are called as admission webhooks are: same service resolution,
	// no client credentials.
	converters, err := conversion.NewCRConverterFactory(admission.WebhookServiceResolver(opts.Admission.WebhookServices), admission.WebhookAuthentication())
	if err != nil {
		return nil, err
	}
	types, err := catalog.New(ctx, store, converters, log)
	if err != nil {
		return nil, err
	}
	namespaces, ok := types.Lookup("", "v1", "namespaces")
	if !ok {
		return nil, errors.New("the catalog serves no namespaces")
	}
	rbacAuthorizer := rbac.NewAuthorizer()
	escalation := &rbac.Escalation{RBAC: rbacAuthorizer}
	opts.Admission.NoPolicyTypeChecking = !opts.Controllers.Runs(names.ValidatingAdmissionPolicyStatusController)
	admissionChain := admission.New(opts.Admission, types, escalation, log)
	objects, err := registry.New(ctx, store, namespaces, registry.Options{Logger: log, RevisionWait: opts.RevisionWait,
		Admission: admissionChain, NoNamespaceLifecycle: !opts.Admission.PluginEnabled(lifecycle.PluginName), WatchBookmarkInterval: opts.WatchBookmarkInterval})
	if err != nil {
		return nil, err
	}
	admissionChain.ReadFrom(objects, store)
	deps := controllers.Deps{Store: store, Registry: objects, Catalog: types, Log: log}
	rbacController, err := startControllers(ctx, deps, namespaces, rbacAuthorizer, opts)
	if err != nil {
		return nil, err
	}
	lb, err := loopback.New()
	if err != nil {
		return nil, err
	}
	sec, err := secure(opts.Security, types, objects, rbacAuthorizer, lb.Informers)
	if err != nil {
		return nil, err
	}
	api := sec.api
	escalation.Authorizer = api.Authorizer
	types.Access().Bind(lb.Client.CoreV1().Namespaces(), api.Authorizer)
	svcs, err := installServices(ctx, types, store, lb, opts.Services)
	if err != nil {
		return nil, err
	}
	if err := svcs.CheckSharedCA(); err != nil {
		return nil, err
	}
	fairness := startPriorityAndFairness(ctx, deps, lb, opts.EffectiveLimits(), opts)
	api.Catalog, api.Registry, api.Discovery, api.FlowControl = types, objects, discovery.NewCache(types, sec.tokens != nil), fairness.control
	if err := serveHandlers(types, objects, sec); err != nil {
		return nil, err
	}
	api.Checks = checks(store, opts, rbacController, fairness, admissionChain, sec.nodeGraphSynced)
	types.Access().BindLiveChecks(runChecks(api.Checks.Live))
	if !opts.NoDefaultObjects {
		api.Checks.Started = append(api.Checks.Started, doneCheck("poststarthook/start-service-ip-repair-controllers", svcs.Ready))
	}
	srv := endpoints.New(api, opts.Options)
	lb.Serve(ctx, srv.InProcess())
	if !opts.NoDefaultObjects {
		srv.OnShutdown(svcs.RunDefaultObjects(ctx, lb.Client))
		go runAPIServices(ctx, types, lb, log)
	}
	if err := admissionChain.Start(ctx, lb.Config, api.Authorizer); err != nil {
		return nil, err
	}
	lb.Informers.Start(ctx.Done())
	metrics.Start(ctx, store, types)
	if opts.Started != nil {
		go notifyStarted(ctx, api.Checks, opts.Started)
	}
	return srv, nil
}

// startPoll is how often notifyStarted asks whether the start has finished.
const startPoll = 50 * time.Millisecond

// notifyStarted calls started once the started and ready checks pass, unless ctx ends first.
func notifyStarted(ctx context.Context, checks endpoints.Checks, started func()) {
	ticker := time.NewTicker(startPoll)
	defer ticker.Stop()
	r := (&http.Request{}).WithContext(ctx)
	for !passing(r, slices.Concat(checks.Started, checks.Ready)) {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
	started()
}

// runChecks runs checks, for componentstatuses.
func runChecks(checks []healthz.HealthChecker) func(context.Context) []resource.Check {
	return func(ctx context.Context) []resource.Check {
		r := (&http.Request{}).WithContext(ctx)
		results := make([]resource.Check, 0, len(checks))
		for _, c := range checks {
			results = append(results, resource.Check{Name: c.Name(), Err: c.Check(r)})
		}
		return results
	}
}

func passing(r *http.Request, checks []healthz.HealthChecker) bool {
	for _, c := range checks {
		if c.Check(r) != nil {
			return false
		}
	}
	return true
}

// runAPIServices keeps the local APIServices of the served group versions until ctx ends.
func runAPIServices(ctx context.Context, types *catalog.Catalog, lb *loopback.Client, log *slog.Logger) {
	if err := apiservices.Run(ctx, types, lb.Config); err != nil {
		log.Error("registering the APIServices", "err", err)
	}
}

// installServices gives the services their cluster IP and node port allocation, which follows
// the ServiceCIDRs and IPAddresses through the loopback client's informers.
func installServices(ctx context.Context, types *catalog.Catalog, store Storage, lb *loopback.Client, opts services.Options) (*services.Services, error) {
	svc, ok := types.Lookup("", "v1", "services")
	if !ok {
		return nil, errors.New("the catalog serves no services")
	}
	return services.Install(ctx, svc, types.Access().BindServiceAllocations, store, lb.Client, lb.Informers, opts)
}

// security is what secure builds: the API's authentication and authorization, the reviews,
// and ServiceAccount token issuing (nil without ServiceAccounts). With the Node mode, the Node
// authorizer's graph follows informers, and nodeGraphSynced tells when it holds what is stored.
type security struct {
	api             endpoints.API
	reviewer        *reviews.Reviewer
	tokens          *tokenrequest.Issuing
	nodeGraphSynced func() bool
}

// secure builds authentication, authorization, the reviews and ServiceAccount token issuing
// from sec; without it every request is an unsecured admin.
func secure(sec *Security, types *catalog.Catalog, objects *registry.Registry, rbacAuthorizer *rbac.Authorizer, informers kubeinformers.SharedInformerFactory) (security, error) {
	built := security{nodeGraphSynced: func() bool { return true }}
	if sec == nil {
		authz := auth.RuleAuthorizer(authorizerfactory.NewAlwaysAllowAuthorizer())
		built.api, built.reviewer = endpoints.API{Authenticator: auth.Unsecured, Authorizer: authz}, reviews.New(authz, authz, nil)
		return built, nil
	}
	api := &built.api
	authentication := sec.Authentication
	api.Audiences = sec.APIAudiences
	if sa := sec.ServiceAccounts; sa != nil {
		if len(api.Audiences) == 0 {
			api.Audiences = authenticator.Audiences{sa.Issuer}
		}
		tokenObjects := tokenrequest.NewRegistryObjects(types, objects)
		tokens, err := tokenrequest.New(sa, api.Audiences, tokenObjects)
		if err != nil {
			return built, err
		}
		built.tokens, authentication.ServiceAccountTokens = tokens, serviceaccount.NewVerifier(sa.Issuer, sa.PublicKeys, tokenObjects)
		docs := tokens.Discovery()
		api.Documents = []endpoints.Document{
			{Path: "/.well-known/openid-configuration", ContentType: "application/json", Body: docs.OpenIDConfiguration},
			{Path: serviceaccount.JWKSPath, ContentType: "application/jwk-set+json", Body: docs.JWKS},
		}
	}
	authn, tokenReviews, err := auth.NewAuthenticator(authentication)
	if err != nil {
		return built, err
	}
	var nodeAuthorizer auth.RuleAuthorizer
	if slices.Contains(sec.AuthorizationModes, auth.ModeNode) {
		nodeAuthorizer, built.nodeGraphSynced = auth.NewNodeAuthorizer(informers)
	}
	authz, err := auth.NewAuthorizer(sec.AuthorizationModes, rbacAuthorizer, nodeAuthorizer)
	if err != nil {
		return built, err
	}
	api.Authenticator, api.Authorizer, built.reviewer = authn, authz, reviews.New(authz, authz, tokenReviews)
	return built, nil
}

// serveHandlers registers, with the types, the handlers of what is not stored as it is posted:
// the pods', nodes' and Services' subresources beyond /status, a ServiceAccount's token, and the
// create-only types (the reviews, namespaces/NS/bindings).
func serveHandlers(types *catalog.Catalog, objects *registry.Registry, sec security) error {
	podSubresources, err := pods.New(types, objects)
	if err != nil {
		return err
	}
	types.ServeCreateOnly(append(sec.reviewer.Resources(), podSubresources.Bindings())...)
	if sec.tokens == nil {
		return nil
	}
	serviceAccounts, ok := types.Lookup("", "v1", "serviceaccounts")
	if !ok {
		return errors.New("the catalog serves no serviceaccounts")
	}
	return serviceAccounts.Serve("token", sec.tokens.Creater())
}

// startControllers runs, until ctx ends, the controllers kube-apiserver and
// kube-controller-manager would run for deletion to behave as on a cluster (the CRD cleanup,
// the namespace controller and the garbage collector), the RBAC controller, which feeds the
// RBAC authorizer, and those that keep a default ServiceAccount and the root CA bundle in every
// namespace.
func startControllers(ctx context.Context, deps controllers.Deps, namespaces *resource.Resource, rbacAuthorizer *rbac.Authorizer, opts Options) (*rbaccontroller.Controller, error) {
	rbacController, err := rbaccontroller.New(deps, rbacAuthorizer)
	if err != nil {
		return nil, err
	}
	crdCleanup, err := crdcleanup.New(deps)
	if err != nil {
		return nil, err
	}
	go crdCleanup.Run(ctx)
	runs := opts.Controllers.Runs
	logControllers(deps.Log, runs)
	if runs(names.NamespaceController) {
		go namespace.Run(ctx, deps, namespaces)
	}
	if runs(names.GarbageCollectorController) {
		go gc.Run(ctx, deps)
	}
	go rbacController.Run(ctx, rbaccontroller.RunOptions{Bootstrap: !opts.NoDefaultObjects, Aggregate: runs(names.ClusterRoleAggregationController)})
	if !opts.NoDefaultObjects {
		for _, obj := range perNamespaceObjects(deps.Catalog, opts.Security, runs) {
			go perns.Run(ctx, deps, namespaces, obj)
		}
		if pcs, ok := deps.Catalog.Lookup(builtin.SchedulingGroup, "v1", "priorityclasses"); ok {
			go priorityclasses.Run(ctx, deps, pcs)
		}
	}
	return rbacController, nil
}

// logControllers says which of kube-controller-manager's controllers the server runs, and which
// it leaves to kube-controller-manager.
func logControllers(log *slog.Logger, runs func(controller string) bool) {
	var running, left []string
	for _, name := range controllers.KubeControllerManagers {
		if runs(name) {
			running = append(running, name)
		} else {
			left = append(left, name)
		}
	}
	log.Info("kube-controller-manager's controllers", "running", strings.Join(running, ","), "leftToKubeControllerManager", strings.Join(left, ","))
}

// rootCADescription is the annotation kube-controller-manager puts on kube-root-ca.crt.
const rootCADescription = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."

// perNamespaceObjects are what every namespace holds, of what the controllers that runs runs:
// a default ServiceAccount, and the CA bundle clients verify the server with, when the server
// knows it.
func perNamespaceObjects(types *catalog.Catalog, sec *Security, runs func(controller string) bool) []perns.Object {
	var objs []perns.Object
	if sa, ok := types.Lookup("", "v1", "serviceaccounts"); ok && runs(names.ServiceAccountController) {
		objs = append(objs, perns.Object{Resource: sa, Name: "default"})
	}
	cm, ok := types.Lookup("", "v1", "configmaps")
	if ok && sec != nil && len(sec.RootCA) > 0 && runs(names.RootCACertificatePublisherController) {
		objs = append(objs, perns.Object{Resource: cm, Name: "kube-root-ca.crt",
			Content:     map[string]any{"data": map[string]any{"ca.crt": string(sec.RootCA)}},
			Annotations: map[string]string{"kubernetes.io/description": rootCADescription}})
	}
	return objs
}

// fairness is priority and fairness as started: all nil when it is off.
type fairness struct {
	control utilflowcontrol.Interface
	// synced tells when it has read its configuration, which bootstrap writes.
	synced    func() bool
	bootstrap *fcbootstrap.Bootstrap
}

// startPriorityAndFairness runs kube's API priority and fairness until ctx ends, unless the
// limits turn it off (then the plain in-flight limits apply): the bootstrap configuration
// objects are written, and the library's configuration controller follows them through the
// loopback client and shares the server's concurrency (both in-flight limits together) out to
// the priority levels.
func startPriorityAndFairness(ctx context.Context, deps controllers.Deps, lb *loopback.Client, limits filters.Limits, opts Options) fairness {
	if !limits.PriorityAndFairness {
		genericfilters.StartMaxInFlightWatermarkMaintenance(ctx.Done())
		return fairness{}
	}
	f := fairness{bootstrap: fcbootstrap.NewBootstrap(deps, !opts.NoDefaultObjects)}
	go func() {
		if err := f.bootstrap.Run(ctx); err != nil && ctx.Err() == nil {
			opts.Logger.Error("writing the priority and fairness configuration", "err", err)
		}
	}()
	concurrency := limits.MaxRequestsInFlight + limits.MaxMutatingRequestsInFlight
	f.control = utilflowcontrol.New(lb.Informers, lb.Client.FlowcontrolV1(), concurrency)
	schemas := lb.Informers.Flowcontrol().V1().FlowSchemas().Informer()
	levels := lb.Informers.Flowcontrol().V1().PriorityLevelConfigurations().Informer()
	f.synced = func() bool { return schemas.HasSynced() && levels.HasSynced() }
	go func() { _ = f.control.Run(ctx.Done()) }()
	genericfilters.StartPriorityAndFairnessWatermarkMaintenance(ctx.Done())
	return f
}

// checks are kube-apiserver's health checks: the database answers (live); what the server
// writes at start is written, the bootstrap RBAC policy and flow-control configuration
// (started); the RBAC authorizer, priority and fairness and the admission chain have read their
// objects, without which they may refuse or misclassify requests (ready).
func checks(store Storage, opts Options, rbacController *rbaccontroller.Controller, f fairness, chain *admission.Chain, nodeGraphSynced func() bool) endpoints.Checks {
	var c endpoints.Checks
	// A load balancer stops sending requests to a replica that lost its database.
	c.Live = append(c.Live, healthz.NamedCheck("database", func(r *http.Request) error { return store.Ready(r.Context()) }))
	if opts.Security != nil {
		c.Started = append(c.Started, doneCheck("poststarthook/rbac/bootstrap-roles", rbacController.Bootstrapped))
	}
	if f.bootstrap != nil {
		c.Started = append(c.Started, doneCheck("poststarthook/apiserver/bootstrap-system-flowcontrol-configuration", f.bootstrap.Done))
	}
	c.Ready = append(c.Ready, doneCheck("informer-sync", func() bool {
		rbacSynced := opts.Security == nil || rbacController.Synced()
		return rbacSynced && nodeGraphSynced() && (f.synced == nil || f.synced()) && chain.Synced()
	}))
	return c
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
