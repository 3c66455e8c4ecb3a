package admission

import (
	"context"
	"fmt"

	kubeadmission "k8s.io/apiserver/pkg/admission"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/plugin/pkg/admission/defaulttolerationseconds"
	"k8s.io/kubernetes/plugin/pkg/admission/priority"
	"k8s.io/kubernetes/plugin/pkg/admission/serviceaccount"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/catalog"
	"github.com/sqlkube/sqlkube/server/registry"
)

// newPodPlugins are the plugins of kube-apiserver's default admission chain that change a new
// Pod, in kube's order, as libraries (k8s.io/kubernetes/plugin/pkg/admission), initialized as
// the chain's plugins are: ServiceAccount (spec.serviceAccountName "default", and the projected
// kube-api-access-* volume and its mounts when the ServiceAccount exists), Priority
// (spec.priority from the PriorityClass named, or the global default, else 0; only when
// scheduling.k8s.io/v1 priorityclasses is served, since its informer must sync) and
// DefaultTolerationSeconds (the not-ready and unreachable tolerations of 300s).
func newPodPlugins(types *catalog.Catalog, initializers kubeadmission.PluginInitializer) ([]kubeadmission.MutationInterface, error) {
	plugins := []kubeadmission.MutationInterface{serviceaccount.NewServiceAccount()}
	if _, served := types.Lookup("scheduling.k8s.io", "v1", "priorityclasses"); served {
		plugins = append(plugins, priority.NewPlugin())
	}
	plugins = append(plugins, defaulttolerationseconds.NewDefaultTolerationSeconds())
	for _, plugin := range plugins {
		initializers.Initialize(plugin)
		if err := kubeadmission.ValidateInitialization(plugin); err != nil {
			return nil, fmt.Errorf("building the pods' admission plugins: %w", err)
		}
	}
	return plugins, nil
}

// admitPod runs the pod plugins on the creation of a Pod: they take kube's internal Pod, which
// req.Object is converted to and back from (a body the decoder took converts).
func (c *Chain) admitPod(ctx context.Context, req *registry.AdmissionRequest) error {
	plugins := c.podPlugins.Load()
	if plugins == nil || req.Resource.Group != "" || req.Resource.Name != builtin.PodsResource || req.Subresource != "" ||
		req.Operation != kubeadmission.Create || req.Object == nil {
		return nil
	}
	attrs := attributes(ctx, req)
	return builtin.ChangeInternalPod(req.Object, func(pod *api.Pod) error {
		internal := kubeadmission.NewAttributesRecord(pod, nil, attrs.GetKind(), attrs.GetNamespace(), attrs.GetName(), attrs.GetResource(),
			"", kubeadmission.Create, attrs.GetOperationOptions(), attrs.IsDryRun(), attrs.GetUserInfo())
		for _, plugin := range *plugins {
			if err := plugin.Admit(ctx, internal, c.objects); err != nil {
				return err
			}
		}
		return nil
	})
}
