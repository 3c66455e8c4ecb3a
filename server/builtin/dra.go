package builtin

import (
	resourcev1 "k8s.io/api/resource/v1"
	_ "k8s.io/kubernetes/pkg/apis/resource/install" // resource's defaults and conversions in legacyscheme.Scheme
	"k8s.io/kubernetes/pkg/registry/resource/deviceclass"
	"k8s.io/kubernetes/pkg/registry/resource/devicetaintrule"
	"k8s.io/kubernetes/pkg/registry/resource/resourceclaim"
	"k8s.io/kubernetes/pkg/registry/resource/resourceclaimtemplate"
	"k8s.io/kubernetes/pkg/registry/resource/resourceslice"

	"github.com/sqlkube/sqlkube/server/resource"
)

// ResourceGroup is the group of dynamic resource allocation (DRA).
const ResourceGroup = "resource.k8s.io"

// resourceResources are the resource.k8s.io/v1 types kube-apiserver v1.37 serves by default,
// with its own rules (kube). A ResourceSlice's field labels are those its GetAttrs gives.
// ResourceClaims and their templates are stored as kube-apiserver stores them; nothing
// allocates a claim (no scheduler, no DRA driver), as in envtest. Their strategies read
// namespaces and ask the authorizer through access.
func resourceResources(access *Access) []*resource.Resource {
	claims := resourceclaim.NewStrategy(access.namespaces(), access)
	return []*resource.Resource{
		builtin(ResourceGroup, "v1", "resourceclaims", "ResourceClaim", true, verbsAll, kube[resourcev1.ResourceClaim](kubeRules{
			returnsDeleted: true,
			strategy:       claims, status: resourceclaim.NewStatusStrategy(claims),
		}), withStatus),
		builtin(ResourceGroup, "v1", "resourceclaimtemplates", "ResourceClaimTemplate", true, verbsAll, kube[resourcev1.ResourceClaimTemplate](kubeRules{
			returnsDeleted: true,
			strategy:       resourceclaimtemplate.NewStrategy(access.namespaces()),
		}), nil),
		builtin(ResourceGroup, "v1", "deviceclasses", "DeviceClass", false, verbsAll, kube[resourcev1.DeviceClass](kubeRules{
			returnsDeleted: true,
			strategy:       deviceclass.Strategy,
		}), nil),
		builtin(ResourceGroup, "v1", "devicetaintrules", "DeviceTaintRule", false, verbsAll, kube[resourcev1.DeviceTaintRule](kubeRules{
			strategy: devicetaintrule.Strategy, status: devicetaintrule.StatusStrategy,
		}), describe(withStatus, hashedAs("v1beta2"))),
		builtin(ResourceGroup, "v1", "resourceslices", "ResourceSlice", false, verbsAll, kube[resourcev1.ResourceSlice](kubeRules{
			returnsDeleted: true,
			strategy:       resourceslice.Strategy,
			fields: map[string][]string{
				"spec.nodeName": {"spec", "nodeName"}, "spec.driver": {"spec", "driver"}, "spec.pool.name": {"spec", "pool", "name"},
			},
		}), nil),
	}
}
