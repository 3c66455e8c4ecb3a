package builtin

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	_ "k8s.io/kubernetes/pkg/apis/flowcontrol/install" // flowcontrol's defaults and conversions in legacyscheme.Scheme
	"k8s.io/kubernetes/pkg/registry/flowcontrol/flowschema"
	"k8s.io/kubernetes/pkg/registry/flowcontrol/prioritylevelconfiguration"

	"github.com/sqlkube/sqlkube/server/resource"
)

// flowControlResources are the flowcontrol.apiserver.k8s.io/v1 types the priority-and-fairness
// filter follows, served with kube's own strategies (kube), with /status.
func flowControlResources() []*resource.Resource {
	return []*resource.Resource{
		builtin(FlowControlGroup, "v1", "flowschemas", "FlowSchema", false, verbsAll, kube[flowcontrolv1.FlowSchema](kubeRules{
			strategy: flowschema.Strategy, status: flowschema.StatusStrategy,
		}), withStatus),
		builtin(FlowControlGroup, "v1", "prioritylevelconfigurations", "PriorityLevelConfiguration", false, verbsAll, kube[flowcontrolv1.PriorityLevelConfiguration](kubeRules{
			strategy: prioritylevelconfiguration.Strategy, status: prioritylevelconfiguration.StatusStrategy,
		}), withStatus),
	}
}
