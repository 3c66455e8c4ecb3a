package builtin

import (
	appsv1 "k8s.io/api/apps/v1"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"        // apps' defaults and conversions in legacyscheme.Scheme
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install" // the Scales of their /scale
	"k8s.io/kubernetes/pkg/registry/apps/controllerrevision"
	"k8s.io/kubernetes/pkg/registry/apps/daemonset"
	"k8s.io/kubernetes/pkg/registry/apps/deployment"
	"k8s.io/kubernetes/pkg/registry/apps/replicaset"
	"k8s.io/kubernetes/pkg/registry/apps/statefulset"

	"github.com/sqlkube/sqlkube/server/resource"
)

// AppsGroup is the group of the workload types served with kube's own rules.
const AppsGroup = "apps"

// appsResources are the apps/v1 types, served with kube-apiserver's own rules (kube), with the
// names and subresources kube's storage of each gives them. None has field selectors beyond
// metadata: apps/v1 converts no other field label (a ReplicaSet's GetAttrs has status.replicas,
// which kube-apiserver refuses in a request all the same).
func appsResources() []*resource.Resource {
	return []*resource.Resource{
		builtin(AppsGroup, "v1", "controllerrevisions", "ControllerRevision", true, verbsAll, kube[appsv1.ControllerRevision](kubeRules{
			strategy: controllerrevision.Strategy,
		}), nil),
		builtin(AppsGroup, "v1", "daemonsets", "DaemonSet", true, verbsAll, kube[appsv1.DaemonSet](kubeRules{
			strategy: daemonset.Strategy, status: daemonset.StatusStrategy,
		}), workload("ds")),
		builtin(AppsGroup, "v1", "deployments", "Deployment", true, verbsAll, kube[appsv1.Deployment](kubeRules{
			strategy: deployment.Strategy, status: deployment.StatusStrategy,
		}), scalableWorkload("deploy")),
		builtin(AppsGroup, "v1", "replicasets", "ReplicaSet", true, verbsAll, kube[appsv1.ReplicaSet](kubeRules{
			strategy: replicaset.Strategy, status: replicaset.StatusStrategy,
		}), scalableWorkload("rs")),
		builtin(AppsGroup, "v1", "statefulsets", "StatefulSet", true, verbsAll, kube[appsv1.StatefulSet](kubeRules{
			strategy: statefulset.Strategy, status: statefulset.StatusStrategy,
		}), scalableWorkload("sts")),
	}
}

// workload is a workload type's description: its short name, in category all, with /status.
func workload(shortName string) func(*resource.Resource) {
	return func(r *resource.Resource) {
		r.ShortNames = []string{shortName}
		r.Categories = []string{"all"}
		r.Status = true
	}
}

// scalableWorkload is a workload with /scale of its spec.replicas and spec.selector.
func scalableWorkload(shortName string) func(*resource.Resource) {
	return func(r *resource.Resource) {
		workload(shortName)(r)
		r.Scale = &resource.ScaleSubresource{
			SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas",
			LabelSelectorPath: ".spec.selector", StructuredSelector: true,
		}
	}
}
