package builtin

import (
	corev1 "k8s.io/api/core/v1"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // core's defaults and conversions in legacyscheme.Scheme
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/core/podtemplate"
	"k8s.io/kubernetes/pkg/registry/core/replicationcontroller"

	"github.com/sqlkube/sqlkube/server/resource"
)

// PodsResource is the resource name of the Pods, whose subresources beyond /status are served
// by package pods.
const PodsResource = "pods"

// coreResources are the core/v1 workload types, served with kube-apiserver's own rules (kube),
// with the names, subresources and field selector labels kube gives them. Nothing runs them:
// no scheduler binds a Pod, no kubelet runs it, no controller creates a ReplicationController's
// Pods.
func coreResources() []*resource.Resource {
	return []*resource.Resource{
		builtin("", "v1", PodsResource, "Pod", true, verbsAll, kube[corev1.Pod](kubeRules{
			returnsDeleted: true,
			strategy:       pod.Strategy, status: pod.StatusStrategy, fields: podFields,
		}), func(r *resource.Resource) {
			workload("po")(r)
			r.Subresources = podSubresources(r.Strategy.(*kubeTypeStrategy))
		}),
		builtin("", "v1", "podtemplates", "PodTemplate", true, verbsAll, kube[corev1.PodTemplate](kubeRules{
			returnsDeleted: true,
			strategy:       podtemplate.Strategy,
		}), nil),
		builtin("", "v1", "replicationcontrollers", "ReplicationController", true, verbsAll, kube[corev1.ReplicationController](kubeRules{
			strategy: replicationcontroller.Strategy, status: replicationcontroller.StatusStrategy,
			fields: map[string][]string{"status.replicas": {"status", "replicas"}},
		}), func(r *resource.Resource) {
			workload("rc")(r)
			r.Scale = &resource.ScaleSubresource{
				SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas",
				LabelSelectorPath: ".spec.selector", MapSelector: true,
			}
		}),
	}
}

// podFields are the field selector labels kube-apiserver accepts for Pods beyond metadata (its
// field label conversion), with the paths pod.ToSelectableFields reads them from. spec.host is
// the old name of spec.nodeName; status.podIPs is accepted but never set (its value is "").
var podFields = map[string][]string{
	"spec.nodeName":            {"spec", "nodeName"},
	"spec.host":                {"spec", "nodeName"},
	"spec.restartPolicy":       {"spec", "restartPolicy"},
	"spec.schedulerName":       {"spec", "schedulerName"},
	"spec.serviceAccountName":  {"spec", "serviceAccountName"},
	"spec.hostNetwork":         {"spec", "hostNetwork"},
	"status.phase":             {"status", "phase"},
	"status.podIP":             {"status", "podIP"},
	"status.podIPs":            nil,
	"status.nominatedNodeName": {"status", "nominatedNodeName"},
}

// podSubresources are the Pods' subresources beyond /status, as kube-apiserver's discovery
// lists them: ephemeralcontainers and resize are updates of the pod with kube's strategies of
// them; package pods serves the others.
func podSubresources(s *kubeTypeStrategy) []resource.Subresource {
	verbsUpdate := []string{"get", "patch", "update"}
	return []resource.Subresource{
		{Name: "attach", Kind: "PodAttachOptions", Verbs: []string{"create", "get"}},
		{Name: "binding", Kind: "Binding", Verbs: []string{"create"}},
		{Name: "ephemeralcontainers", Kind: "Pod", Verbs: verbsUpdate, Strategy: s.subresourceStrategy(pod.EphemeralContainersStrategy)},
		{Name: "eviction", Group: "policy", Version: "v1", Kind: "Eviction", Verbs: []string{"create"}},
		{Name: "exec", Kind: "PodExecOptions", Verbs: []string{"create", "get"}},
		{Name: "log", Kind: "Pod", Verbs: []string{"get"}},
		{Name: "portforward", Kind: "PodPortForwardOptions", Verbs: []string{"create", "get"}},
		proxySubresource("Pod"),
		{Name: "resize", Kind: "Pod", Verbs: verbsUpdate, Strategy: s.subresourceStrategy(pod.ResizeStrategy)},
	}
}

// proxySubresource is the /proxy subresource of a type whose objects run something a request can
// be proxied to (pods, nodes, Services), with the verbs of the methods it serves; package
// subresources answers it.
func proxySubresource(kind string) resource.Subresource {
	return resource.Subresource{Name: "proxy", Kind: kind + "ProxyOptions", Verbs: []string{"create", "delete", "get", "patch", "update"}}
}
