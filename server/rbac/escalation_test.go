package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

func TestCovers(t *testing.T) {
	named := func(verbs []string, resource string, names ...string) rbacv1.PolicyRule {
		r := rule(verbs, "", resource)
		r.ResourceNames = names
		return r
	}
	tests := []struct {
		name           string
		owner, servant []rbacv1.PolicyRule
		want           bool
	}{
		{"same rule", []rbacv1.PolicyRule{rule(read, "", "configmaps")}, []rbacv1.PolicyRule{rule(read, "", "configmaps")}, true},
		{"fewer verbs", []rbacv1.PolicyRule{rule(read, "", "configmaps")}, []rbacv1.PolicyRule{rule([]string{"get"}, "", "configmaps")}, true},
		{"more verbs", []rbacv1.PolicyRule{rule([]string{"get"}, "", "configmaps")}, []rbacv1.PolicyRule{rule(read, "", "configmaps")}, false},
		{"split across owner rules", []rbacv1.PolicyRule{rule([]string{"get"}, "", "configmaps"), rule([]string{"list"}, "", "configmaps")},
			[]rbacv1.PolicyRule{rule([]string{"get", "list"}, "", "configmaps")}, true},
		{"wildcards cover all", []rbacv1.PolicyRule{rule([]string{"*"}, "*", "*")}, []rbacv1.PolicyRule{rule(readWrite, "apps", "deployments/scale")}, true},
		{"a named resource is not all of them", []rbacv1.PolicyRule{named([]string{"get"}, "secrets", "a")}, []rbacv1.PolicyRule{rule([]string{"get"}, "", "secrets")}, false},
		{"all covers a named one", []rbacv1.PolicyRule{rule([]string{"get"}, "", "secrets")}, []rbacv1.PolicyRule{named([]string{"get"}, "secrets", "a")}, true},
		{"*/sub covers res/sub", []rbacv1.PolicyRule{rule([]string{"get"}, "", "*/status")}, []rbacv1.PolicyRule{rule([]string{"get"}, "", "namespaces/status")}, true},
		{"URL prefix", []rbacv1.PolicyRule{urlRule([]string{"get"}, "/healthz/*")}, []rbacv1.PolicyRule{urlRule([]string{"get"}, "/healthz/ping")}, true},
		{"URL not under prefix", []rbacv1.PolicyRule{urlRule([]string{"get"}, "/healthz/*")}, []rbacv1.PolicyRule{urlRule([]string{"get"}, "/metrics")}, false},
		{"wildcard wanted, not held", []rbacv1.PolicyRule{rule(readWrite, "", "configmaps")}, []rbacv1.PolicyRule{rule([]string{"*"}, "", "configmaps")}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, missing := Covers(tc.owner, tc.servant); got != tc.want {
				t.Errorf("Covers = %v (missing %v), want %v", got, missing, tc.want)
			}
		})
	}
}

// TestEscalationError checks kube's wording: the user, its groups, and each missing rule
// compacted per resource, sorted.
func TestEscalationError(t *testing.T) {
	u := &user.DefaultInfo{Name: "system:serviceaccount:rbac:privesc", Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	_, missing := Covers(nil, []rbacv1.PolicyRule{rule([]string{"get", "list"}, "", "pods"), rule([]string{"delete"}, rbacv1.GroupName, "roles")})
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
	if ok, missing := Covers(rules, want); !ok {
		t.Errorf("edit misses %v", missing)
	}
}
