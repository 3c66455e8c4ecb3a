package rbac

import (
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/component-helpers/auth/rbac/validation"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"
)

// TestEscalationError checks kube's wording: the user, its groups, and each missing rule
// compacted per resource, sorted.
func TestEscalationError(t *testing.T) {
	u := &user.DefaultInfo{Name: "system:serviceaccount:rbac:privesc", Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	_, missing := validation.Covers(nil, []rbacv1.PolicyRule{rule([]string{"get", "list"}, "", "pods"), rule([]string{"delete"}, rbacv1.GroupName, "roles")})
	want := `user "system:serviceaccount:rbac:privesc" (groups=["system:serviceaccounts" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}
{APIGroups:["rbac.authorization.k8s.io"], Resources:["roles"], Verbs:["delete"]}`
	if got := EscalationError(u, missing, nil).Error(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestAggregatedRules aggregates kube's bootstrap edit role with a role of a CRD author's.
func TestAggregatedRules(t *testing.T) {
	roles := bootstrappolicy.ClusterRoles()
	byName := map[string]rbacv1.ClusterRole{}
	for _, r := range roles {
		byName[r.Name] = r
	}
	extra := rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "widgets-edit", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
		Rules: []rbacv1.PolicyRule{rule(readWrite, "example.com", "widgets")}}
	roles = append(roles, extra)
	edit := byName["edit"]
	rules, err := AggregatedRules(edit.AggregationRule, "edit", roles)
	if err != nil {
		t.Fatal(err)
	}
	// edit aggregates system:aggregate-to-edit and widgets-edit, in name order; view is labelled
	// to aggregate into edit but has no rules until aggregated itself.
	want := append(append([]rbacv1.PolicyRule{}, byName["system:aggregate-to-edit"].Rules...), extra.Rules...)
	if !reflect.DeepEqual(rules, want) {
		t.Errorf("edit aggregates\n%v\nwant\n%v", rules, want)
	}
}
