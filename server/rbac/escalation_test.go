package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/component-helpers/auth/rbac/validation"
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

func TestAggregatedRules(t *testing.T) {
	roles := BootstrapClusterRoles()
	byName := map[string]rbacv1.ClusterRole{}
	for _, r := range roles {
		byName[r.Name] = r
	}
	extra := clusterRole("widgets-edit", map[string]string{aggregateToEdit: "true"}, rule(readWrite, "example.com", "widgets"))
	roles = append(roles, extra)
	edit := byName["edit"]
	rules, err := AggregatedRules(edit.AggregationRule, "edit", roles)
	if err != nil {
		t.Fatal(err)
	}
	// edit aggregates system:aggregate-to-edit and widgets-edit, in name order; view is labelled
	// to aggregate into edit but has no rules until aggregated itself.
	want := append(append([]rbacv1.PolicyRule{}, byName["system:aggregate-to-edit"].Rules...), extra.Rules...)
	if len(rules) != len(want) {
		t.Fatalf("edit aggregates %d rules, want %d: %v", len(rules), len(want), rules)
	}
	if ok, missing := validation.Covers(rules, want); !ok {
		t.Errorf("edit misses %v", missing)
	}
}
