package admission

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/approval"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/signing"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/subjectrestriction"
	"k8s.io/kubernetes/plugin/pkg/admission/defaulttolerationseconds"
	"k8s.io/kubernetes/plugin/pkg/admission/limitranger"
	"k8s.io/kubernetes/plugin/pkg/admission/network/defaultingressclass"
	"k8s.io/kubernetes/plugin/pkg/admission/nodetaint"
	"k8s.io/kubernetes/plugin/pkg/admission/priority"
	"k8s.io/kubernetes/plugin/pkg/admission/security/podsecurity"
	"k8s.io/kubernetes/plugin/pkg/admission/serviceaccount"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/persistentvolume/resize"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageclass/setdefault"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageobjectinuseprotection"

	"github.com/sqlkube/sqlkube/server/catalog"
	"github.com/sqlkube/sqlkube/server/registry"
)

// kubePluginNames are the admission plugins of kube-apiserver's default set that act on the
// built-in types sqlkube serves with kube's rules, in kube's order (AllOrderedPlugins); they run
// before the policies and webhooks, as in kube. ResourceQuota, which kube runs last (after the
// webhooks), is built with them and run apart (checkQuota).
var kubePluginNames = []string{
	limitranger.PluginName,                  // LimitRanger: pods' default resources, pods' and claims' limits
	serviceaccount.PluginName,               // ServiceAccount: a pod's account and its token volume
	nodetaint.PluginName,                    // TaintNodesByCondition: a new node's not-ready taint
	podsecurity.PluginName,                  // PodSecurity: pods against their namespace's pod security labels
	priority.PluginName,                     // Priority: a pod's priority from its PriorityClass
	defaulttolerationseconds.PluginName,     // DefaultTolerationSeconds: the not-ready and unreachable tolerations
	setdefault.PluginName,                   // DefaultStorageClass: a claim's class
	storageobjectinuseprotection.PluginName, // StorageObjectInUseProtection: volumes' and claims' finalizers
	resize.PluginName,                       // PersistentVolumeClaimResize: only expandable claims grow
	approval.PluginName,                     // CertificateApproval: /approval needs approve on the signer
	signing.PluginName,                      // CertificateSigning: a certificate in /status needs sign
	subjectrestriction.PluginName,           // CertificateSubjectRestriction: no client certificates for system:masters
	defaultingressclass.PluginName,          // DefaultIngressClass: an Ingress's class
}

// kubePluginResources are the resources kubePluginNames act on: only their writes are
// converted to kube's internal types for them (each plugin also checks the resource itself).
var kubePluginResources = map[schema.GroupResource]bool{
	{Resource: "pods"}: true, {Resource: "nodes"}: true, {Resource: "persistentvolumes"}: true, {Resource: "persistentvolumeclaims"}: true,
	{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}: true,
	{Group: "networking.k8s.io", Resource: "ingresses"}:                    true,
	{Group: "scheduling.k8s.io", Resource: "priorityclasses"}:              true,
}

// internalObjects converts a type's objects to kube's internal Go type and back, which the
// strategy of a built-in served with kube's rules does (builtin's kube adapter).
type internalObjects interface {
	ToInternal(obj *unstructured.Unstructured) (runtime.Object, error)
	FromInternal(internal runtime.Object, obj *unstructured.Unstructured) error
}

// kubePlugins are kubePluginNames and ResourceQuota, built as kube-apiserver builds them.
type kubePlugins struct {
	admit    kubeadmission.MutationInterface
	validate kubeadmission.ValidationInterface
	quota    kubeadmission.ValidationInterface
}

// newKubePlugins builds kubePluginNames and ResourceQuota on client (LimitRanger looks up
// LimitRanges with it when none is listed, ResourceQuota writes the quotas' status with it),
// the listers of informers, authz (which the certificate plugins ask) and the quota
// configuration of what types serves.
func newKubePlugins(ctx context.Context, client kubernetes.Interface, informers informers.SharedInformerFactory, authz authorizer.Authorizer, types *catalog.Catalog) (*kubePlugins, error) {
	registered := kubeadmission.NewPlugins()
	for _, register := range []func(*kubeadmission.Plugins){
		limitranger.Register, serviceaccount.Register, nodetaint.Register, podsecurity.Register, priority.Register, defaulttolerationseconds.Register, setdefault.Register, storageobjectinuseprotection.Register, resize.Register,
		approval.Register, signing.Register, subjectrestriction.Register, defaultingressclass.Register, resourcequota.Register,
	} {
		register(registered)
	}
	quotaConfig, err := newQuotaConfiguration(types, informers)
	if err != nil {
		return nil, fmt.Errorf("building kube's quota configuration: %w", err)
	}
	initializers := kubeadmission.PluginInitializers{initializer.New(client, nil, informers, authz,
		utilfeature.DefaultFeatureGate, utilcompatibility.DefaultBuildEffectiveVersion(), ctx.Done(), nil), quotaConfig}
	chain, err := registered.NewFromPlugins(kubePluginNames, noPluginConfig{}, initializers, nil)
	if err != nil {
		return nil, fmt.Errorf("building kube's admission plugins: %w", err)
	}
	quota, err := registered.NewFromPlugins([]string{resourcequota.PluginName}, noPluginConfig{}, initializers, nil)
	if err != nil {
		return nil, fmt.Errorf("building kube's ResourceQuota plugin: %w", err)
	}
	return &kubePlugins{admit: chain.(kubeadmission.MutationInterface), validate: chain.(kubeadmission.ValidationInterface),
		quota: quota.(kubeadmission.ValidationInterface)}, nil
}

// mutate runs the plugins' mutations on req's object as kube's internal type, and writes the
// result back to it.
func (p *kubePlugins) mutate(ctx context.Context, req *registry.AdmissionRequest, objects kubeadmission.ObjectInterfaces) error {
	return p.run(ctx, req, true, func(attrs kubeadmission.Attributes) error {
		if !p.admit.Handles(attrs.GetOperation()) {
			return nil
		}
		return p.admit.Admit(ctx, attrs, objects)
	})
}

// check runs the plugins' validations on req's object as kube's internal type.
func (p *kubePlugins) check(ctx context.Context, req *registry.AdmissionRequest, objects kubeadmission.ObjectInterfaces) error {
	return p.run(ctx, req, false, func(attrs kubeadmission.Attributes) error {
		if !p.validate.Handles(attrs.GetOperation()) {
			return nil
		}
		return p.validate.Validate(ctx, attrs, objects)
	})
}

// run calls plugins with req's attributes, its objects converted to kube's internal type, and
// when writeBack is set converts the object the plugins changed back into req.Object. Writes
// of the other resources, and deletes, are left alone: the plugins act on none.
func (p *kubePlugins) run(ctx context.Context, req *registry.AdmissionRequest, writeBack bool, plugins func(kubeadmission.Attributes) error) error {
	gr := schema.GroupResource{Group: req.Resource.Group, Resource: req.Resource.Name}
	if p == nil || !kubePluginResources[gr] {
		return nil
	}
	internal, ok := converted(ctx, req)
	if !ok {
		return nil // validation refuses it
	}
	if err := plugins(internal); err != nil {
		return err
	}
	if !writeBack {
		return nil
	}
	return req.Resource.Strategy.(internalObjects).FromInternal(internal.GetObject(), req.Object)
}

// converted are req's attributes with its objects converted to kube's internal type, as kube's
// plugins get them; ok is false for a type whose strategy does not convert (the custom
// resources), a delete, a Scale, or an object that does not convert.
func converted(ctx context.Context, req *registry.AdmissionRequest) (_ kubeadmission.Attributes, ok bool) {
	converter, ok := req.Resource.Strategy.(internalObjects)
	if !ok || req.Object == nil || req.Subresource == "scale" {
		return nil, false
	}
	obj, err := converter.ToInternal(req.Object)
	if err != nil {
		return nil, false
	}
	var old runtime.Object
	if req.OldObject != nil {
		if old, err = converter.ToInternal(req.OldObject); err != nil {
			return nil, false
		}
	}
	attrs := attributes(ctx, req)
	return kubeadmission.NewAttributesRecord(obj, old, attrs.GetKind(), attrs.GetNamespace(), attrs.GetName(),
		attrs.GetResource(), attrs.GetSubresource(), attrs.GetOperation(), attrs.GetOperationOptions(), attrs.IsDryRun(), attrs.GetUserInfo()), true
}

// internalAttributes are req's attributes converted when they can be, as they are otherwise:
// kube's quota evaluators read the built-in types as Go types, and count the others' objects.
func internalAttributes(ctx context.Context, req *registry.AdmissionRequest) kubeadmission.Attributes {
	if attrs, ok := converted(ctx, req); ok {
		return attrs
	}
	return attributes(ctx, req)
}
