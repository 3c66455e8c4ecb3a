// Package admission is kube's admission chain as sqlkube runs it: the mutating and validating
// admission policies and webhooks of kube-apiserver's admission plugins, on the loopback client
// and its informers, then the RBAC escalation check. The registry calls it on every write made
// by a user (Chain implements registry.Admission); the chain calls webhooks over HTTPS and
// writes the type checking of ValidatingAdmissionPolicies to their status.
package admission

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kubeadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	mutatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	webhookinit "k8s.io/apiserver/pkg/admission/plugin/webhook/initializer"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/dynamic"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/catalog"
	"github.com/sqlkube/sqlkube/server/follow"
	"github.com/sqlkube/sqlkube/server/rbac"
	"github.com/sqlkube/sqlkube/server/registry"
)

// Options configure the admission chain.
type Options struct {
	// WebhookServices maps a webhook's service reference, "namespace/name", to the host:port
	// it is called at (--webhook-service-resolver): sqlkube has no cluster network to find
	// services on. A service not mapped is called at its cluster DNS name,
	// https://name.namespace.svc:port, which the host must resolve. Either way the webhook's
	// certificate is verified for name.namespace.svc, as kube does.
	WebhookServices map[string]string
}

// plugins are kube-apiserver's admission plugins that sqlkube runs, in kube's order: mutating
// ones (policies, then webhooks) then validating ones (policies, then webhooks). Namespace
// lifecycle and RBAC escalation, which kube also runs as admission, are the registry's and the
// RBAC package's.
var plugins = []string{mutatingpolicy.PluginName, mutatingwebhook.PluginName, validatingpolicy.PluginName, validatingwebhook.PluginName}

// Chain is the registry's admission step: kube's admission plugins, once Start has built them,
// then the RBAC escalation check. Until Start, writes are admitted by the escalation check
// alone.
type Chain struct {
	opts       Options
	log        *slog.Logger
	catalog    *catalog.Catalog
	escalation *rbac.Escalation
	objects    objectInterfaces
	// stored is what kube's plugins read through the registry; kube are those plugins, built
	// by Start.
	stored registryObjects
	kube   atomic.Pointer[kubePlugins]
	// store is what quotas follows (set by ReadFrom); quotas tells the namespaces that may hold
	// ResourceQuotas, the only ones whose writes kube's ResourceQuota plugin evaluates.
	store  follow.Storage
	quotas *quotaNamespaces
	chain  atomic.Pointer[kubeadmission.Interface]
	// mutating and validating tell whether there is any configuration for the chain's
	// mutating or validating plugins to apply; when there is none the chain is skipped, which
	// saves its cost on every write (it would do nothing).
	mutating, validating atomic.Pointer[configuration]
}

var _ registry.Admission = (*Chain)(nil)

// New is the chain of the types types serves, ending with escalation's check of RBAC writes
// (whose Authorizer may be set later, before the first write). It admits by escalation alone
// until Start.
func New(opts Options, types *catalog.Catalog, escalation *rbac.Escalation, log *slog.Logger) *Chain {
	return &Chain{opts: opts, log: log, catalog: types, escalation: escalation, objects: objectInterfaces{types},
		stored: registryObjects{types: types}, quotas: newQuotaNamespaces()}
}

// ReadFrom makes objects the registry kube's plugins read the objects they look up from
// (StorageClasses, LimitRanges, ResourceQuotas), and store the storage the chain follows the
// ResourceQuotas in. Call it before Start: the registry is built on the chain.
func (c *Chain) ReadFrom(objects *registry.Registry, store follow.Storage) {
	c.stored.objects, c.store = objects, store
}

// Synced reports whether the chain has been started and has read its configuration objects,
// for the readiness check: until then a write its plugins match waits for them.
func (c *Chain) Synced() bool {
	m, v := c.mutating.Load(), c.validating.Load()
	return c.chain.Load() != nil && m.synced() && v.synced()
}

// configuration is the informers of some admission configuration objects.
type configuration []cache.SharedIndexInformer

func (c *configuration) synced() bool {
	for _, informer := range *c {
		if !informer.HasSynced() {
			return false
		}
	}
	return true
}

// any reports whether an object of the configuration exists, or might: until the informers
// have synced, the plugins decide (they wait for their configuration).
func (c *configuration) any() bool {
	if c == nil {
		return false
	}
	for _, informer := range *c {
		if !informer.HasSynced() || len(informer.GetStore().ListKeys()) > 0 {
			return true
		}
	}
	return false
}

// Mutate runs kube's default plugins that change a new Pod, the chain's mutating plugins, then
// the RBAC escalation check: kube's RBAC
// storage checks the object they made, before it is validated (so an escalation is refused
// before an invalid field is named) and before the validating plugins run.
func (c *Chain) Mutate(ctx context.Context, req *registry.AdmissionRequest) error {
	if err := c.kube.Load().mutate(ctx, req, c.objects); err != nil {
		return err
	}
	if err := c.mutateByPlugins(ctx, req); err != nil {
		return err
	}
	if req.Resource.Group == builtin.RBACGroup && req.Object != nil {
		return c.escalation.Check(ctx, req.Resource.Name, req.Namespace, req.Object, req.OldObject)
	}
	return nil
}

func (c *Chain) mutateByPlugins(ctx context.Context, req *registry.AdmissionRequest) error {
	chain := c.chain.Load()
	if chain == nil || !c.mutating.Load().any() {
		return nil
	}
	m, ok := (*chain).(kubeadmission.MutationInterface)
	attrs := attributes(ctx, req)
	if !ok || !m.Handles(attrs.GetOperation()) {
		return nil
	}
	return m.Admit(ctx, attrs, c.objects)
}

// Validate runs the chain's validating plugins, kube's plugins of the built-in types first and
// ResourceQuota last, as kube-apiserver orders them.
func (c *Chain) Validate(ctx context.Context, req *registry.AdmissionRequest) error {
	kube := c.kube.Load()
	if err := kube.check(ctx, req, c.objects); err != nil {
		return err
	}
	if err := c.validateByPlugins(ctx, req); err != nil {
		return err
	}
	return kube.checkQuota(ctx, req, c.objects, c.quotas)
}

func (c *Chain) validateByPlugins(ctx context.Context, req *registry.AdmissionRequest) error {
	chain := c.chain.Load()
	if chain == nil || !c.validating.Load().any() {
		return nil
	}
	v, ok := (*chain).(kubeadmission.ValidationInterface)
	attrs := attributes(ctx, req)
	if !ok || !v.Handles(attrs.GetOperation()) {
		return nil
	}
	return v.Validate(ctx, attrs, c.objects)
}

// attributes are req as kube's admission plugins read a request: the requester is the
// context's user.
func attributes(ctx context.Context, req *registry.AdmissionRequest) kubeadmission.Attributes {
	u, _ := genericrequest.UserFrom(ctx)
	res := req.Resource
	return kubeadmission.NewAttributesRecord(objectOrNil(req.Object), objectOrNil(req.OldObject),
		req.Kind, req.Namespace, req.Name,
		res.GroupResource().WithVersion(res.Version), req.Subresource, req.Operation, req.Options, req.DryRun, u)
}

// objectOrNil keeps a nil object a nil interface, which the plugins test for.
func objectOrNil(obj *unstructured.Unstructured) runtime.Object {
	if obj == nil {
		return nil
	}
	return obj
}

// Start builds kube's admission plugins, as kube-apiserver's admission options do, on a client
// of loopback (the server's own API, as a member of system:masters) and informers of their
// own, with authz deciding what their expressions ask; the plugins follow their configuration
// objects, and the type checking of policies is written, until ctx ends.
func (c *Chain) Start(ctx context.Context, loopback *rest.Config, authz authorizer.Authorizer) error {
	client, err := kubernetes.NewForConfig(loopback)
	if err != nil {
		return err
	}
	dynamicClient, err := dynamic.NewForConfig(loopback)
	if err != nil {
		return err
	}
	return c.start(ctx, client, dynamicClient, authz)
}

// start is Start on the given clients.
func (c *Chain) start(ctx context.Context, client kubernetes.Interface, dynamicClient dynamic.Interface, authz authorizer.Authorizer) error {
	informers := kubeinformers.NewSharedInformerFactory(client, 0)
	mapper := newCatalogRESTMapper(c.catalog)
	registered := kubeadmission.NewPlugins()
	mutatingpolicy.Register(registered)
	mutatingwebhook.Register(registered)
	validatingpolicy.Register(registered)
	validatingwebhook.Register(registered)
	initializers := kubeadmission.PluginInitializers{
		initializer.NewAPIServerIDInitializer("sqlkube"),
		initializer.New(client, dynamicClient, informers, authz, utilfeature.DefaultFeatureGate,
			utilcompatibility.DefaultBuildEffectiveVersion(), ctx.Done(), mapper),
		webhookinit.NewPluginInitializer(WebhookAuthentication(), WebhookServiceResolver(c.opts.WebhookServices)),
	}
	chain, err := registered.NewFromPlugins(plugins, noPluginConfig{}, initializers, nil)
	if err != nil {
		return fmt.Errorf("building the admission chain: %w", err)
	}
	kube, err := newKubePlugins(ctx, client, c.stored.informers(informers), authz, c.catalog)
	if err != nil {
		return err
	}
	if c.store != nil {
		go follow.Resource(ctx, c.store, c.log, resourceQuotasStorageName, c.quotas)
	}
	c.kube.Store(kube)
	if err := c.startPolicyTypeChecking(ctx, client, informers, mapper); err != nil {
		return err
	}
	objects := informers.Admissionregistration().V1()
	c.mutating.Store(&configuration{objects.MutatingAdmissionPolicyBindings().Informer(), objects.MutatingWebhookConfigurations().Informer()})
	c.validating.Store(&configuration{objects.ValidatingAdmissionPolicyBindings().Informer(), objects.ValidatingWebhookConfigurations().Informer()})
	informers.Start(ctx.Done())
	// As kube-apiserver's handlers do, record the plugins' audit annotations in the request's
	// audit event.
	audited := kubeadmission.WithAudit(chain)
	c.chain.Store(&audited)
	return nil
}

// noPluginConfig: the plugins run with their defaults (kube's --admission-control-config-file
// is not offered).
type noPluginConfig struct{}

func (noPluginConfig) ConfigFor(string) (io.Reader, error) { return nil, nil }
