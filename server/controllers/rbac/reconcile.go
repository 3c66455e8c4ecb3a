package rbac

import (
	"maps"
	"reflect"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/sqlkube/sqlkube/server/rbac"
)

// The bootstrap policy's objects are reconciled as kube-apiserver reconciles them at start: one
// that exists gets back what the policy has and it lacks (labels, annotations, rules, aggregation
// selectors, subjects), unless annotated rbac.authorization.kubernetes.io/autoupdate "false".
// What an operator added stays. Each function says whether it changed have.

func reconcileClusterRole(have, want *rbacv1.ClusterRole) bool {
	if protected(&have.ObjectMeta) {
		return false
	}
	changed := reconcileMeta(&have.ObjectMeta, &want.ObjectMeta)
	if _, missing := validation.Covers(have.Rules, want.Rules); len(missing) > 0 {
		have.Rules = append(have.Rules, missing...)
		changed = true
	}
	if want.AggregationRule != nil {
		if have.AggregationRule == nil {
			have.AggregationRule = &rbacv1.AggregationRule{}
		}
		for _, selector := range want.AggregationRule.ClusterRoleSelectors {
			if !slices.ContainsFunc(have.AggregationRule.ClusterRoleSelectors, func(s metav1.LabelSelector) bool { return reflect.DeepEqual(s, selector) }) {
				have.AggregationRule.ClusterRoleSelectors = append(have.AggregationRule.ClusterRoleSelectors, selector)
				changed = true
			}
		}
	}
	return changed
}

// reconcileClusterRoleBinding adds the policy's missing subjects. A binding whose roleRef differs
// is left alone (kube deletes and recreates it; a roleRef can't be updated).
func reconcileClusterRoleBinding(have, want *rbacv1.ClusterRoleBinding) bool {
	if protected(&have.ObjectMeta) || have.RoleRef != want.RoleRef {
		return false
	}
	changed := reconcileMeta(&have.ObjectMeta, &want.ObjectMeta)
	for _, subject := range want.Subjects {
		if !slices.Contains(have.Subjects, subject) {
			have.Subjects = append(have.Subjects, subject)
			changed = true
		}
	}
	return changed
}

func protected(meta *metav1.ObjectMeta) bool {
	return meta.Annotations[rbac.AutoUpdateAnnotation] == "false"
}

// reconcileMeta adds the labels and annotations have lacks; its own values win.
func reconcileMeta(have, want *metav1.ObjectMeta) bool {
	labels, annotations := withMissing(have.Labels, want.Labels), withMissing(have.Annotations, want.Annotations)
	changed := !maps.Equal(labels, have.Labels) || !maps.Equal(annotations, have.Annotations)
	have.Labels, have.Annotations = labels, annotations
	return changed
}

func withMissing(have, want map[string]string) map[string]string {
	if len(want) == 0 {
		return have
	}
	merged := maps.Clone(want)
	maps.Copy(merged, have)
	return merged
}
