package builtin

import (
	corev1 "k8s.io/api/core/v1"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // core's defaults and conversions in legacyscheme.Scheme
	"k8s.io/kubernetes/pkg/registry/core/limitrange"
	"k8s.io/kubernetes/pkg/registry/core/node"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolume"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"
	"k8s.io/kubernetes/pkg/registry/core/resourcequota"

	"github.com/sqlkube/sqlkube/server/resource"
)

// clusterResources are the core/v1 types of a cluster's nodes and of what they share (volumes,
// their claims, limits and quotas), served with kube-apiserver's own rules (kube), with the
// names and subresources kube's storage of each gives them. Nothing runs them: no kubelet
// reports a node's status, no controller binds a claim or counts a quota's usage, as in envtest.
// The effects of kube's admission plugins on them (a new node's not-ready taint, the
// storage protection finalizers, the default StorageClass) are the admission chain's.
func clusterResources() []*resource.Resource {
	return []*resource.Resource{
		builtin("", "v1", "nodes", "Node", false, verbsAll, kube[corev1.Node](kubeRules{
			strategy: node.Strategy, status: node.StatusStrategy,
			// core/v1 converts this field label of nodes (and metadata.name).
			fields: map[string][]string{"spec.unschedulable": {"spec", "unschedulable"}},
		}), withShortNameAndStatus("no")),
		builtin("", "v1", "persistentvolumes", "PersistentVolume", false, verbsAll, kube[corev1.PersistentVolume](kubeRules{
			strategy: persistentvolume.Strategy, status: persistentvolume.StatusStrategy,
		}), withShortNameAndStatus("pv")),
		builtin("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true, verbsAll, kube[corev1.PersistentVolumeClaim](kubeRules{
			strategy: persistentvolumeclaim.Strategy, status: persistentvolumeclaim.StatusStrategy,
		}), withShortNameAndStatus("pvc")),
		builtin("", "v1", "limitranges", "LimitRange", true, verbsAll, kube[corev1.LimitRange](kubeRules{
			strategy: limitrange.Strategy,
		}), func(r *resource.Resource) { r.ShortNames = []string{"limits"} }),
		builtin("", "v1", "resourcequotas", "ResourceQuota", true, verbsAll, kube[corev1.ResourceQuota](kubeRules{
			strategy: resourcequota.Strategy, status: resourcequota.StatusStrategy,
		}), withShortNameAndStatus("quota")),
	}
}

// withShortNameAndStatus is a type with one short name and /status.
func withShortNameAndStatus(shortName string) func(*resource.Resource) {
	return func(r *resource.Resource) {
		r.ShortNames = []string{shortName}
		r.Status = true
	}
}
