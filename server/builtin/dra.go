package builtin

import (
	resourcev1 "k8s.io/api/resource/v1"
	_ "k8s.io/kubernetes/pkg/apis/resource/install" // resource's defaults and conversions in legacyscheme.Scheme
	"k8s.io/kubernetes/pkg/registry/resource/deviceclass"
	"k8s.io/kubernetes/pkg/registry/resource/devicetaintrule"
	"k8s.io/kubernetes/pkg/registry/resource/resourceslice"

	"github.com/sqlkube/sqlkube/server/resource"
)

// ResourceGroup is the group of dynamic resource allocation (DRA).
const ResourceGroup = "resource.k8s.io"

// resourceResources are the resource.k8s.io/v1 types kube-apiserver v1.37 serves by default,
// with its own rules (kube). A ResourceSlice's field labels are those its GetAttrs gives.
func resourceResources() []*resource.Resource {
	return []*resource.Resource{
		builtin(ResourceGroup, "v1", "deviceclasses", "DeviceClass", false, verbsAll, kube[resourcev1.DeviceClass](kubeRules{
			strategy: deviceclass.Strategy,
		}), nil),
		builtin(ResourceGroup, "v1", "devicetaintrules", "DeviceTaintRule", false, verbsAll, kube[resourcev1.DeviceTaintRule](kubeRules{
			strategy: devicetaintrule.Strategy, status: devicetaintrule.StatusStrategy,
		}), withStatus),
		builtin(ResourceGroup, "v1", "resourceslices", "ResourceSlice", false, verbsAll, kube[resourcev1.ResourceSlice](kubeRules{
			strategy: resourceslice.Strategy,
			fields: map[string][]string{
				"spec.nodeName": {"spec", "nodeName"}, "spec.driver": {"spec", "driver"}, "spec.pool.name": {"spec", "pool", "name"},
			},
		}), nil),
	}
}
