package rbac

import (
	"reflect"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// AggregatedRules are the rules of an aggregated ClusterRole: those of every other ClusterRole
// one of its selectors matches, in name order, each rule once; as kube-controller-manager's
// clusterrole-aggregation controller computes them. roles are all ClusterRoles.
func AggregatedRules(rule *rbacv1.AggregationRule, self string, roles []rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	var selectors []labels.Selector
	for i := range rule.ClusterRoleSelectors {
		s, err := metav1.LabelSelectorAsSelector(&rule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, err
		}
		selectors = append(selectors, s)
	}
	sorted := slices.Clone(roles)
	slices.SortFunc(sorted, func(a, b rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	rules := []rbacv1.PolicyRule{}
	for _, role := range sorted {
		if role.Name == self || !matchesAny(selectors, role.Labels) {
			continue
		}
		for _, r := range role.Rules {
			if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return reflect.DeepEqual(have, r) }) {
				rules = append(rules, r)
			}
		}
	}
	return rules, nil
}

func matchesAny(selectors []labels.Selector, l map[string]string) bool {
	return slices.ContainsFunc(selectors, func(s labels.Selector) bool { return s.Matches(labels.Set(l)) })
}
