package admission

import (
	"context"
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubeadmission "k8s.io/apiserver/pkg/admission"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/networking"
	"k8s.io/kubernetes/plugin/pkg/admission/network/defaultingressclass"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/registry"
)

// defaultIngressClass runs kube's DefaultIngressClass plugin (an Ingress created without a
// class gets the default IngressClass's name), which kube-apiserver runs before the
// webhooks. The plugin reads kube's internal Ingress, so the object is converted for it and
// back.
func (c *Chain) defaultIngressClass(ctx context.Context, req *registry.AdmissionRequest) error {
	plugin := c.ingressClasses.Load()
	if plugin == nil || req.Operation != kubeadmission.Create || req.Subresource != "" ||
		req.Resource.Group != builtin.NetworkingGroup || req.Resource.Name != "ingresses" {
		return nil
	}
	versioned := &networkingv1.Ingress{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(req.Object.Object, versioned); err != nil {
		return nil // validation refuses it
	}
	internal := &networking.Ingress{}
	if err := legacyscheme.Scheme.Convert(versioned, internal, nil); err != nil {
		return nil
	}
	u, _ := genericrequest.UserFrom(ctx)
	attrs := kubeadmission.NewAttributesRecord(internal, nil, req.Kind, req.Namespace, req.Name,
		req.Resource.GroupResource().WithVersion(req.Resource.Version), "", req.Operation, req.Options, req.DryRun, u)
	if err := (*plugin).(kubeadmission.MutationInterface).Admit(ctx, attrs, c.objects); err != nil {
		return err
	}
	if err := legacyscheme.Scheme.Convert(internal, versioned, nil); err != nil {
		return fmt.Errorf("converting the Ingress back: %w", err)
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(versioned)
	if err != nil {
		return err
	}
	content["apiVersion"], content["kind"] = req.Object.GetAPIVersion(), req.Object.GetKind()
	req.Object.Object = content
	return nil
}

// newDefaultIngressClass builds kube's DefaultIngressClass plugin with initializers.
func newDefaultIngressClass(initializers kubeadmission.PluginInitializers) (kubeadmission.Interface, error) {
	registered := kubeadmission.NewPlugins()
	defaultingressclass.Register(registered)
	return registered.NewFromPlugins([]string{defaultingressclass.PluginName}, noPluginConfig{}, initializers, nil)
}
