package server

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
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
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/loopback"
	"github.com/sqlkube/sqlkube/server/rbac"
	"github.com/sqlkube/sqlkube/server/registry"
)

// Admission configures the admission chain.
type Admission struct {
	// WebhookServices maps a webhook's service reference, "namespace/name", to the host:port
	// it is called at (--webhook-service-resolver): sqlkube has no cluster network to find
	// services on. A service not mapped is called at its cluster DNS name,
	// https://name.namespace.svc:port, which the host must resolve. Either way the webhook's
	// certificate is verified for name.namespace.svc, as kube does.
	WebhookServices map[string]string
}

// admissionPlugins are kube-apiserver's admission plugins that sqlkube runs, in kube's order:
// mutating ones (policies, then webhooks) then validating ones (policies, then webhooks).
// Namespace lifecycle and RBAC escalation, which kube also runs as admission, are the
// registry's and the RBAC package's.
var admissionPlugins = []string{mutatingpolicy.PluginName, mutatingwebhook.PluginName, validatingpolicy.PluginName, validatingwebhook.PluginName}

// admissionStep is the registry's admission step: the RBAC escalation check and kube's
// admission chain, once startAdmission has built it.
type admissionStep struct {
	escalation *rbac.Escalation
	objects    admissionObjects
	chain      atomic.Pointer[admission.Interface]
	// mutating and validating tell whether there is any configuration for the chain's
	// mutating or validating plugins to apply; when there is none the chain is skipped, which
	// saves its cost on every write (it would do nothing).
	mutating, validating configuration
}

// synced reports whether the chain has read its configuration objects.
func (a *admissionStep) synced() bool {
	return a.chain.Load() != nil && a.mutating.synced() && a.validating.synced()
}

// configuration is the informers of some admission configuration objects.
type configuration []cache.SharedIndexInformer

func (c configuration) synced() bool {
	for _, informer := range c {
		if !informer.HasSynced() {
			return false
		}
	}
	return true
}

// any reports whether an object of the configuration exists, or might: until the informers
// have synced, the plugins decide (they wait for their configuration).
func (c configuration) any() bool {
	for _, informer := range c {
		if !informer.HasSynced() || len(informer.GetStore().ListKeys()) > 0 {
			return true
		}
	}
	return false
}

// Mutate runs the chain's mutating plugins, then the RBAC escalation check: kube's RBAC
// storage checks the object they made, before it is validated (so an escalation is refused
// before an invalid field is named) and before the validating plugins run.
func (a *admissionStep) Mutate(ctx context.Context, req *registry.AdmissionRequest) error {
	if err := a.mutateByChain(ctx, req); err != nil {
		return err
	}
	if req.Resource.Group == builtin.RBACGroup && req.Object != nil {
		return a.escalation.Check(ctx, req.Resource.Name, req.Namespace, req.Object, req.OldObject)
	}
	return nil
}

func (a *admissionStep) mutateByChain(ctx context.Context, req *registry.AdmissionRequest) error {
	chain := a.chain.Load()
	if chain == nil || !a.mutating.any() {
		return nil
	}
	m, ok := (*chain).(admission.MutationInterface)
	attrs := admissionAttributes(ctx, req)
	if !ok || !m.Handles(attrs.GetOperation()) {
		return nil
	}
	return m.Admit(ctx, attrs, a.objects)
}

func (a *admissionStep) Validate(ctx context.Context, req *registry.AdmissionRequest) error {
	chain := a.chain.Load()
	if chain == nil || !a.validating.any() {
		return nil
	}
	v, ok := (*chain).(admission.ValidationInterface)
	attrs := admissionAttributes(ctx, req)
	if !ok || !v.Handles(attrs.GetOperation()) {
		return nil
	}
	return v.Validate(ctx, attrs, a.objects)
}

// admissionAttributes are req as kube's admission plugins read a request: the requester is the
// context's user.
func admissionAttributes(ctx context.Context, req *registry.AdmissionRequest) admission.Attributes {
	u, _ := genericrequest.UserFrom(ctx)
	res := req.Resource
	return admission.NewAttributesRecord(objectOrNil(req.Object), objectOrNil(req.OldObject),
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

// startAdmission builds kube's admission chain, as kube-apiserver's admission options do, on
// the loopback client and its informers, with the server's authorizer; the plugins follow their
// configuration objects until ctx ends.
func (s *Server) startAdmission(ctx context.Context, lb *loopback.Client, authz authorizer.Authorizer) error {
	client, informers := lb.Client, lb.Informers
	dynamicClient, err := dynamic.NewForConfig(lb.Config)
	if err != nil {
		return err
	}
	mapper := newCatalogRESTMapper(s.catalog)
	plugins := admission.NewPlugins()
	mutatingpolicy.Register(plugins)
	mutatingwebhook.Register(plugins)
	validatingpolicy.Register(plugins)
	validatingwebhook.Register(plugins)
	initializers := admission.PluginInitializers{
		initializer.NewAPIServerIDInitializer("sqlkube"),
		initializer.New(client, dynamicClient, informers, authz, utilfeature.DefaultFeatureGate,
			utilcompatibility.DefaultBuildEffectiveVersion(), ctx.Done(), mapper),
		webhookinit.NewPluginInitializer(webhookAuthentication(), webhookServiceResolver(s.opts.Admission.WebhookServices)),
	}
	chain, err := plugins.NewFromPlugins(admissionPlugins, noPluginConfig{}, initializers, nil)
	if err != nil {
		return fmt.Errorf("building the admission chain: %w", err)
	}
	if err := s.startPolicyTypeChecking(ctx, client, informers, mapper); err != nil {
		return err
	}
	objects := informers.Admissionregistration().V1()
	s.admission.mutating = configuration{objects.MutatingAdmissionPolicyBindings().Informer(), objects.MutatingWebhookConfigurations().Informer()}
	s.admission.validating = configuration{objects.ValidatingAdmissionPolicyBindings().Informer(), objects.ValidatingWebhookConfigurations().Informer()}
	informers.Start(ctx.Done())
	// As kube-apiserver's handlers do, record the plugins' audit annotations in the request's
	// audit event.
	audited := admission.WithAudit(chain)
	s.admission.chain.Store(&audited)
	return nil
}

// noPluginConfig: the plugins run with their defaults (kube's --admission-control-config-file
// is not offered).
type noPluginConfig struct{}

func (noPluginConfig) ConfigFor(string) (io.Reader, error) { return nil, nil }

// webhookAuthentication: sqlkube presents no client credentials to webhooks (kube's
// --admission-control-config-file kubeconfig for them is not offered).
func webhookAuthentication() webhookutil.AuthenticationInfoResolverWrapper {
	return func(resolver webhookutil.AuthenticationInfoResolver) webhookutil.AuthenticationInfoResolver {
		return resolver
	}
}

// serviceResolver resolves webhook service references by the configured mapping, or else by
// their cluster DNS name.
type serviceResolver struct {
	mapped map[string]string
	dns    webhookutil.ServiceResolver
}

func webhookServiceResolver(mapped map[string]string) webhookutil.ServiceResolver {
	return serviceResolver{mapped: mapped, dns: webhookutil.NewDefaultServiceResolver()}
}

func (r serviceResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	if hostPort, ok := r.mapped[namespace+"/"+name]; ok {
		return &url.URL{Scheme: "https", Host: hostPort}, nil
	}
	return r.dns.ResolveEndpoint(namespace, name, port)
}
