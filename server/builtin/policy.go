package builtin

import (
	policyv1 "k8s.io/api/policy/v1"
	_ "k8s.io/kubernetes/pkg/apis/policy/install" // policy's defaults and conversions in legacyscheme.Scheme
	"k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget"

	"github.com/sqlkube/sqlkube/server/resource"
)

// PolicyGroup is the group of PodDisruptionBudgets (and of the Evictions of pods/eviction).
const PolicyGroup = "policy"

// policyResources are the policy/v1 types, served with kube-apiserver's own rules. A
// PodDisruptionBudget's status is what its writers store: no disruption controller computes it,
// and evictions (package pods) read and decrement it as kube-apiserver's do.
func policyResources() []*resource.Resource {
	return []*resource.Resource{
		builtin(PolicyGroup, "v1", "poddisruptionbudgets", "PodDisruptionBudget", true, verbsAll, kube[policyv1.PodDisruptionBudget](kubeRules{
			strategy: poddisruptionbudget.Strategy, status: poddisruptionbudget.StatusStrategy,
		}), describe(shortName("pdb"), withStatus)),
	}
}
