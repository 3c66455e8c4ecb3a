package builtin

import (
	schedulingv1 "k8s.io/api/scheduling/v1"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install" // scheduling's defaults and conversions in legacyscheme.Scheme
	"k8s.io/kubernetes/pkg/registry/scheduling/priorityclass"

	"github.com/sqlkube/sqlkube/server/resource"
)

// SchedulingGroup is the group of PriorityClasses.
const SchedulingGroup = "scheduling.k8s.io"

// schedulingResources are the scheduling.k8s.io/v1 types, served with kube-apiserver's own
// rules (kube).
func schedulingResources() []*resource.Resource {
	return []*resource.Resource{
		builtin(SchedulingGroup, "v1", "priorityclasses", "PriorityClass", false, verbsAll, kube[schedulingv1.PriorityClass](kubeRules{
			strategy: priorityclass.Strategy,
		}), shortName("pc")),
	}
}
