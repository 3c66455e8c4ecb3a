package admission

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	kubeadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	mutatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	webhookinit "k8s.io/apiserver/pkg/admission/plugin/webhook/initializer"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	apiserverapiv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	apiserverapiv1alpha1 "k8s.io/apiserver/pkg/apis/apiserver/v1alpha1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	controlplaneadmission "k8s.io/kubernetes/pkg/controlplane/apiserver/admission"
	"k8s.io/kubernetes/pkg/kubeapiserver/admission/exclusion"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	"github.com/sqlkube/sqlkube/server/registry"
)

// configScheme decodes --admission-control-config-file, as kube-apiserver's admission options'
// scheme does.
var configScheme = runtime.NewScheme()

func init() {
	utilruntime.Must(apiserverapi.AddToScheme(configScheme))
	utilruntime.Must(apiserverapiv1alpha1.AddToScheme(configScheme))
	utilruntime.Must(apiserverapiv1.AddToScheme(configScheme))
}

// NewPluginOptions are kube-apiserver's admission options: every plugin it registers, in its
// order, its default set, and its flags.
func NewPluginOptions() *kubeoptions.AdmissionOptions {
	return kubeoptions.NewAdmissionOptions()
}

// EnabledPlugins are the plugins opts enable, in kube's order: kube-apiserver's admission
// options compute them so when they build the chain (in an unexported method).
func EnabledPlugins(opts *kubeoptions.AdmissionOptions) []string {
	generic := opts.GenericAdmission
	enable, disable := generic.EnablePlugins, generic.DisablePlugins
	if opts.PluginNames != nil { // the deprecated --admission-control: exactly these
		enable, disable = opts.PluginNames, generic.RecommendedPluginOrder
	}
	off := sets.New(disable...).Union(generic.DefaultOffPlugins).Difference(sets.New(enable...))
	var names []string
	for _, name := range generic.RecommendedPluginOrder {
		if !off.Has(name) {
			names = append(names, name)
		}
	}
	return names
}

// newPlugins checks the options as kube-apiserver's do, and builds the enabled plugins as they do (with its
// initializers and the plugins' configuration from --admission-control-config-file), each
// decorated by c.decorate; kube's code logs the chain. The plugins read the objects they look
// up through the registry (c.stored), their own configuration objects from shared, and map
// kinds to resources with mapper.
func (c *Chain) newPlugins(ctx context.Context, client kubernetes.Interface, dynamicClient dynamic.Interface, shared informers.SharedInformerFactory, authz authorizer.Authorizer, mapper meta.RESTMapper) (kubeadmission.Interface, error) {
	if errs := c.opts.Plugins.Validate(); len(errs) > 0 {
		return nil, utilerrors.NewAggregate(errs) // sqlkube's flags were checked so already
	}
	names := EnabledPlugins(c.opts.Plugins)
	generic := c.opts.Plugins.GenericAdmission
	pluginsConfig, err := kubeadmission.ReadAdmissionConfiguration(names, generic.ConfigFile, configScheme)
	if err != nil {
		return nil, fmt.Errorf("failed to read plugin config: %v", err)
	}
	lookups := c.stored.informers(shared)
	quotaConfig, err := newQuotaConfiguration(c.catalog, lookups)
	if err != nil {
		return nil, fmt.Errorf("building kube's quota configuration: %w", err)
	}
	initializers := kubeadmission.PluginInitializers{
		initializer.NewAPIServerIDInitializer("sqlkube"),
		initializer.New(client, dynamicClient, lookups, authz, utilfeature.DefaultFeatureGate,
			utilcompatibility.DefaultBuildEffectiveVersion(), ctx.Done(), mapper),
		webhookinit.NewPluginInitializer(WebhookAuthentication(), WebhookServiceResolver(c.opts.WebhookServices)),
		controlplaneadmission.NewPluginInitializer(quotaConfig, exclusion.Excluded()),
	}
	chain, err := generic.Plugins.NewFromPlugins(names, pluginsConfig, initializers, kubeadmission.DecoratorFunc(c.decorate))
	if err != nil {
		return nil, err
	}
	c.checksNamespaces.Store(slices.Contains(names, lifecycle.PluginName))
	// As kube-apiserver's handlers do, record the plugins' audit annotations in the request's
	// audit event.
	return kubeadmission.WithAudit(chain), nil
}

// decorate runs plugin, named name, on the objects it expects: kube's built-in plugins on kube's
// internal Go types (converted when a plugin asks for them), the policies and webhooks on the
// objects as served (unstructured) when any is configured, ResourceQuota only in namespaces that
// may hold a quota. In NamespaceLifecycle's place runs the registry's own check.
func (c *Chain) decorate(plugin kubeadmission.Interface, name string) kubeadmission.Interface {
	switch name {
	case lifecycle.PluginName:
		return registryLifecycle{objects: c.stored.objects}
	case mutatingpolicy.PluginName, mutatingwebhook.PluginName:
		return onServed{plugin: plugin, configured: c.mutating.Load}
	case validatingpolicy.PluginName, validatingwebhook.PluginName:
		return onServed{plugin: plugin, configured: c.validating.Load}
	case resourcequota.PluginName:
		return onInternal{plugin: plugin, runs: c.quotas.evaluates}
	}
	return onInternal{plugin: plugin}
}

// registryLifecycle runs, in kube's NamespaceLifecycle's place, the registry's check of a
// create in a namespace: it reads the registry's namespace cache where kube's plugin reads an
// informer, and the registry runs the same check itself for the writes not admitted (its own
// controllers'). The registry also refuses the deletion of the initial namespaces, before the
// chain, as kube's plugin would first.
type registryLifecycle struct{ objects *registry.Registry }

func (registryLifecycle) Handles(op kubeadmission.Operation) bool { return op == kubeadmission.Create }

func (l registryLifecycle) Admit(ctx context.Context, a kubeadmission.Attributes, _ kubeadmission.ObjectInterfaces) error {
	if a.GetNamespace() == "" {
		return nil // a cluster-scoped object, or a namespace
	}
	return l.objects.CheckNamespaceAcceptsContent(ctx, a.GetResource().GroupResource(), a.GetName(), a.GetNamespace())
}

// onInternal runs a plugin of kube's built-in types on the request's objects as kube's internal
// types, from its objectView; runs, if set, says whether it runs on a request.
type onInternal struct {
	plugin kubeadmission.Interface
	runs   func(kubeadmission.Attributes) bool
}

func (p onInternal) Handles(op kubeadmission.Operation) bool { return p.plugin.Handles(op) }

func (p onInternal) Admit(ctx context.Context, a kubeadmission.Attributes, o kubeadmission.ObjectInterfaces) error {
	m, ok := p.plugin.(kubeadmission.MutationInterface)
	if !ok || (p.runs != nil && !p.runs(a)) {
		return nil
	}
	return m.Admit(ctx, viewOf(ctx).attributes(a), o)
}

func (p onInternal) Validate(ctx context.Context, a kubeadmission.Attributes, o kubeadmission.ObjectInterfaces) error {
	v, ok := p.plugin.(kubeadmission.ValidationInterface)
	if !ok || (p.runs != nil && !p.runs(a)) {
		return nil
	}
	return v.Validate(ctx, viewOf(ctx).attributes(a), o)
}

// onServed runs a policy or webhook plugin on the objects as served, once the changes of the
// plugins before it are written to them, and only when configured says there may be a policy or
// webhook to apply: otherwise it would cost every write for nothing.
type onServed struct {
	plugin     kubeadmission.Interface
	configured func() *configuration
}

func (p onServed) Handles(op kubeadmission.Operation) bool { return p.plugin.Handles(op) }

func (p onServed) Admit(ctx context.Context, a kubeadmission.Attributes, o kubeadmission.ObjectInterfaces) error {
	m, ok := p.plugin.(kubeadmission.MutationInterface)
	if !ok || !p.configured().any() {
		return nil
	}
	view := viewOf(ctx)
	if err := view.writeBack(); err != nil {
		return err
	}
	defer view.forget() // the plugin may have changed the served object
	return m.Admit(ctx, a, o)
}

func (p onServed) Validate(ctx context.Context, a kubeadmission.Attributes, o kubeadmission.ObjectInterfaces) error {
	v, ok := p.plugin.(kubeadmission.ValidationInterface)
	if !ok || !p.configured().any() {
		return nil
	}
	return v.Validate(ctx, a, o)
}
