package builtin

import (
	nodev1 "k8s.io/api/node/v1"
	_ "k8s.io/kubernetes/pkg/apis/node/install" // node's defaults and conversions in legacyscheme.Scheme
	"k8s.io/kubernetes/pkg/registry/node/runtimeclass"

	"github.com/sqlkube/sqlkube/server/resource"
)

// NodeGroup is the group of RuntimeClasses.
const NodeGroup = "node.k8s.io"

// nodeResources are the node.k8s.io/v1 types, served with kube-apiserver's own rules (kube).
func nodeResources() []*resource.Resource {
	return []*resource.Resource{
		builtin(NodeGroup, "v1", "runtimeclasses", "RuntimeClass", false, verbsAll, kube[nodev1.RuntimeClass](kubeRules{
			strategy: runtimeclass.Strategy,
		}), nil),
	}
}
