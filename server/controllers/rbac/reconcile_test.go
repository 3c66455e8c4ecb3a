package rbac

import (
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReconcileClusterRole(t *testing.T) {
	read := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	list := rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	extra := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}
	want := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Labels: map[string]string{"a": "policy", "b": "policy"}, Annotations: map[string]string{"rbac.authorization.kubernetes.io/autoupdate": "true"}},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{"x": "true"}}, {MatchLabels: map[string]string{"y": "true"}}}},
	}
	have := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Labels: map[string]string{"a": "operator"}},
		Rules:      []rbacv1.PolicyRule{read, extra},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{"x": "true"}}, {MatchLabels: map[string]string{"z": "true"}}}},
	}
	if !reconcileClusterRole(have, want) {
		t.Fatal("a role lacking a rule, a label and a selector: no change")
	}
	wantHave := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Labels: map[string]string{"a": "operator", "b": "policy"}, Annotations: map[string]string{"rbac.authorization.kubernetes.io/autoupdate": "true"}},
		Rules:      []rbacv1.PolicyRule{read, extra, list},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{"x": "true"}}, {MatchLabels: map[string]string{"z": "true"}}, {MatchLabels: map[string]string{"y": "true"}}}},
	}
	if !reflect.DeepEqual(have, wantHave) {
		t.Fatalf("reconciled\n%+v\nwant\n%+v", have, wantHave)
	}
	if reconcileClusterRole(have, want) {
		t.Fatal("reconciling again changed it")
	}

	protectedRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r", Annotations: map[string]string{"rbac.authorization.kubernetes.io/autoupdate": "false"}}}
	if reconcileClusterRole(protectedRole, want) || len(protectedRole.Rules) != 0 {
		t.Fatalf("autoupdate false: changed to %+v", protectedRole)
	}
}

func TestReconcileClusterRoleBinding(t *testing.T) {
	admins := rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:masters"}
	alice := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}
	roleRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}
	want := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, RoleRef: roleRef, Subjects: []rbacv1.Subject{admins}}

	have := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, RoleRef: roleRef, Subjects: []rbacv1.Subject{alice}}
	if !reconcileClusterRoleBinding(have, want) || !reflect.DeepEqual(have.Subjects, []rbacv1.Subject{alice, admins}) {
		t.Fatalf("missing subject: %+v", have.Subjects)
	}
	other := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}}
	if reconcileClusterRoleBinding(other, want) || len(other.Subjects) != 0 {
		t.Fatalf("another roleRef: changed to %+v", other)
	}
}
