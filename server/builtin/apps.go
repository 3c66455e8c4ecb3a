package builtin

import (
	appsv1 "k8s.io/api/apps/v1"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"        // apps' defaults and conversions in legacyscheme.Scheme
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install" // the Scales of their /scale
	"k8s.io/kubernetes/pkg/registry/apps/deployment"

	"github.com/sqlkube/sqlkube/server/resource"
)

// AppsGroup is the group of the workload types served with kube's own rules.
const AppsGroup = "apps"

// appsResources are the apps/v1 types served with kube-apiserver's own rules (kube).
func appsResources() []*resource.Resource {
	return []*resource.Resource{
		builtin(AppsGroup, "v1", "deployments", "Deployment", true, verbsAll, kube[appsv1.Deployment](kubeRules{
			strategy: deployment.Strategy, status: deployment.StatusStrategy,
		}), func(r *resource.Resource) {
			r.ShortNames = []string{"deploy"}
			r.Categories = []string{"all"}
			r.Status = true
			r.Scale = &resource.ScaleSubresource{
				SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas",
				LabelSelectorPath: ".spec.selector", StructuredSelector: true,
			}
		}),
	}
}
