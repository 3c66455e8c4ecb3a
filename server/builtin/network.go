package builtin

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	_ "k8s.io/kubernetes/pkg/apis/core/install"       // core's defaults and conversions in legacyscheme.Scheme
	_ "k8s.io/kubernetes/pkg/apis/discovery/install"  // discovery.k8s.io's
	_ "k8s.io/kubernetes/pkg/apis/networking/install" // networking.k8s.io's
	"k8s.io/kubernetes/pkg/registry/core/endpoint"
	"k8s.io/kubernetes/pkg/registry/core/service"
	"k8s.io/kubernetes/pkg/registry/discovery/endpointslice"
	"k8s.io/kubernetes/pkg/registry/networking/ingress"
	"k8s.io/kubernetes/pkg/registry/networking/ingressclass"
	"k8s.io/kubernetes/pkg/registry/networking/ipaddress"
	"k8s.io/kubernetes/pkg/registry/networking/networkpolicy"
	"k8s.io/kubernetes/pkg/registry/networking/servicecidr"

	"github.com/sqlkube/sqlkube/server/resource"
)

const (
	NetworkingGroup = "networking.k8s.io"
	DiscoveryGroup  = "discovery.k8s.io"
)

// networkResources are the Service and networking types, served with kube-apiserver's own
// rules (kube), with the names, categories and subresources kube's storage of each gives them.
// What kube's service storage adds around its strategy (cluster IPs and node ports) is the
// Allocations hook the assembly sets on services (package services).
func networkResources(access *Access) []*resource.Resource {
	return []*resource.Resource{
		builtin("", "v1", "services", "Service", true, verbsAll, kube[corev1.Service](kubeRules{
			returnsDeleted: true,
			strategy:       service.Strategy, status: service.StatusStrategy,
			fields: map[string][]string{"spec.clusterIP": {"spec", "clusterIP"}, "spec.type": {"spec", "type"}},
		}), func(r *resource.Resource) {
			workload("svc")(r)
			r.Subresources = []resource.Subresource{proxySubresource("Service")}
			r.Allocations = &access.serviceAllocations
		}),
		builtin("", "v1", "endpoints", "Endpoints", true, verbsAll, kube[corev1.Endpoints](kubeRules{
			strategy: endpoint.Strategy,
		}), func(r *resource.Resource) {
			shortName("ep")(r)
			r.DeprecationWarning = "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
		}),
		builtin(DiscoveryGroup, "v1", "endpointslices", "EndpointSlice", true, verbsAll, kube[discoveryv1.EndpointSlice](kubeRules{
			strategy: endpointslice.Strategy,
		}), nil),
		builtin(NetworkingGroup, "v1", "ingresses", "Ingress", true, verbsAll, kube[networkingv1.Ingress](kubeRules{
			strategy: ingress.Strategy, status: ingress.StatusStrategy,
		}), describe(shortName("ing"), withStatus)),
		builtin(NetworkingGroup, "v1", "ingressclasses", "IngressClass", false, verbsAll, kube[networkingv1.IngressClass](kubeRules{
			strategy: ingressclass.Strategy,
		}), nil),
		builtin(NetworkingGroup, "v1", "networkpolicies", "NetworkPolicy", true, verbsAll, kube[networkingv1.NetworkPolicy](kubeRules{
			strategy: networkpolicy.Strategy,
		}), shortName("netpol")),
		builtin(NetworkingGroup, "v1", "ipaddresses", "IPAddress", false, verbsAll, kube[networkingv1.IPAddress](kubeRules{
			strategy: ipaddress.Strategy,
		}), shortName("ip")),
		builtin(NetworkingGroup, "v1", "servicecidrs", "ServiceCIDR", false, verbsAll, kube[networkingv1.ServiceCIDR](kubeRules{
			strategy: servicecidr.Strategy, status: servicecidr.StatusStrategy,
		}), withStatus),
	}
}
