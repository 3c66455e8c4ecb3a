// Package admission is kube's admission chain as sqlkube runs it: kube-apiserver's admission
// plugins, those its flags enable, in its order, from kube's code, on the loopback client and
// objects read through the registry, then the RBAC escalation check. The registry calls it on
// every write made by a user (Chain implements registry.Admission); the chain calls webhooks
// over HTTPS and writes the type checking of ValidatingAdmissionPolicies to their status.
package admission

import (
	"context"
	"log/slog"
	"slices"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kubeadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/dynamic"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

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
	// Plugins are kube-apiserver's admission options (--enable-admission-plugins,
	// --disable-admission-plugins, --admission-control-config-file); nil is kube's defaults.
	Plugins *kubeoptions.AdmissionOptions
	// NoPolicyTypeChecking leaves ValidatingAdmissionPolicies' status.typeChecking to
	// kube-controller-manager (its validatingadmissionpolicy-status-controller).
	NoPolicyTypeChecking bool
}

// PluginEnabled says whether the options enable the plugin called name.
func (o Options) PluginEnabled(name string) bool {
	if o.Plugins == nil {
		o.Plugins = NewPluginOptions()
	}
	return slices.Contains(EnabledPlugins(o.Plugins), name)
}

// Chain is the registry's admission step: kube's admission plugins, once Start has built them
// (ResourceQuota last but for AlwaysDeny, after the policies and webhooks, as in kube), then
// the RBAC escalation check. Until Start, writes are admitted by the escalation check
// alone.
type Chain struct {
	opts       Options
	log        *slog.Logger
	catalog    *catalog.Catalog
	escalation *rbac.Escalation
	objects    objectInterfaces
	// stored is what kube's plugins read through the registry.
	stored registryObjects
	// store is what quotas follows (set by ReadFrom); quotas tells the namespaces that may hold
	// ResourceQuotas, the only ones whose writes kube's ResourceQuota plugin evaluates.
	store  follow.Storage
	quotas *quotaNamespaces
	chain  atomic.Pointer[kubeadmission.Interface]
	// checksNamespaces is set when the chain runs the registry's namespace check of creates
	// (NamespaceLifecycle is enabled).
	checksNamespaces atomic.Bool
	// mutating and validating tell whether there is any configuration for the mutating or
	// validating policies and webhooks to apply; when there is none they are skipped, which
	// saves their cost on every write (they would do nothing).
	mutating, validating atomic.Pointer[configuration]
}

var _ registry.Admission = (*Chain)(nil)

// New is the chain of the types types serves, ending with escalation's check of RBAC writes
// (whose Authorizer may be set later, before the first write). It admits by escalation alone
// until Start.
func New(opts Options, types *catalog.Catalog, escalation *rbac.Escalation, log *slog.Logger) *Chain {
	if opts.Plugins == nil {
		opts.Plugins = NewPluginOptions()
	}
	return &Chain{opts: opts, log: log, catalog: types, escalation: escalation, objects: objectInterfaces{types},
		stored: registryObjects{types: types, log: log}, quotas: newQuotaNamespaces()}
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

// Mutate runs the chain's mutating plugins, then the RBAC escalation check: kube's RBAC storage
// checks the object they made, before it is validated (so an escalation is refused before an
// invalid field is named) and before the validating plugins run.
func (c *Chain) Mutate(ctx context.Context, req *registry.AdmissionRequest) error {
	if chain := c.chain.Load(); chain != nil {
		ctx, view := withView(ctx, req)
		if err := (*chain).(kubeadmission.MutationInterface).Admit(ctx, attributes(ctx, req), c.objects); err != nil {
			return err
		}
		if err := view.writeBack(); err != nil {
			return err
		}
	}
	if req.Resource.Group == builtin.RBACGroup && req.Object != nil {
		return c.escalation.Check(ctx, req.Resource.Name, req.Namespace, req.Object, req.OldObject)
	}
	return nil
}

// ChecksNamespaces says whether the chain, started with NamespaceLifecycle, runs the registry's
// namespace check of creates in that plugin's place.
func (c *Chain) ChecksNamespaces() bool {
	return c.chain.Load() != nil && c.checksNamespaces.Load()
}

// Validate runs the chain's validating plugins.
func (c *Chain) Validate(ctx context.Context, req *registry.AdmissionRequest) error {
	chain := c.chain.Load()
	if chain == nil {
		return nil
	}
	ctx, _ = withView(ctx, req)
	return (*chain).(kubeadmission.ValidationInterface).Validate(ctx, attributes(ctx, req), c.objects)
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
	objects := informers.Admissionregistration().V1()
	c.mutating.Store(&configuration{objects.MutatingAdmissionPolicyBindings().Informer(), objects.MutatingWebhookConfigurations().Informer()})
	c.validating.Store(&configuration{objects.ValidatingAdmissionPolicyBindings().Informer(), objects.ValidatingWebhookConfigurations().Informer()})
	mapper := newCatalogRESTMapper(c.catalog)
	chain, err := c.newPlugins(ctx, client, dynamicClient, informers, authz, mapper)
	if err != nil {
		return err
	}
	if c.store != nil {
		go follow.Resource(ctx, c.store, c.log, resourceQuotasStorageName, c.quotas)
	}
	if !c.opts.NoPolicyTypeChecking {
		if err := c.startPolicyTypeChecking(ctx, client, informers, mapper); err != nil {
			return err
		}
	}
	informers.Start(ctx.Done())
	c.chain.Store(&chain)
	return nil
}
