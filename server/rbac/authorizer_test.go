package rbac

import (
	"context"
	"fmt"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func subjects(s ...rbacv1.Subject) []rbacv1.Subject { return s }

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func groupSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func saSubject(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

func roleRef(kind, name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
}

func decide(t *testing.T, a *Authorizer, u user.Info, verb, resource, namespace string) (authorizer.Decision, string) {
	t.Helper()
	attrs := resourceAttrs(verb, "", resource, "", namespace, "")
	attrs.User = u
	d, reason, err := a.Authorize(context.Background(), attrs)
	if err != nil {
		t.Fatal(err)
	}
	return d, reason
}

func TestAuthorizerBindings(t *testing.T) {
	a := NewAuthorizer()
	a.SetClusterRole("cm-reader", []rbacv1.PolicyRule{rule(read, "", "configmaps")})
	a.SetRole("demo", "secret-writer", []rbacv1.PolicyRule{rule(write, "", "secrets")})
	a.SetBinding("", "readers", roleRef("ClusterRole", "cm-reader"), subjects(groupSubject("readers")))
	a.SetBinding("demo", "cm-in-demo", roleRef("ClusterRole", "cm-reader"), subjects(userSubject("bob")))
	a.SetBinding("demo", "bot-secrets", roleRef("Role", "secret-writer"), subjects(saSubject("", "bot")))

	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"readers"}}
	bob := &user.DefaultInfo{Name: "bob"}
	bot := &user.DefaultInfo{Name: "system:serviceaccount:demo:bot"}
	tests := []struct {
		who                user.Info
		verb, res, ns      string
		want               authorizer.Decision
		reasonContains     string
		reasonMustBeAbsent bool
	}{
		{alice, "list", "configmaps", "", authorizer.DecisionAllow, `RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "cm-reader" to Group "readers"`, false},
		{alice, "create", "configmaps", "demo", authorizer.DecisionNoOpinion, "", true},
		{bob, "get", "configmaps", "demo", authorizer.DecisionAllow, `RBAC: allowed by RoleBinding "cm-in-demo/demo" of ClusterRole "cm-reader" to User "bob"`, false},
		{bob, "get", "configmaps", "other", authorizer.DecisionNoOpinion, "", true},
		{bob, "list", "configmaps", "", authorizer.DecisionNoOpinion, "", true},
		{bot, "create", "secrets", "demo", authorizer.DecisionAllow, `to ServiceAccount "bot/demo"`, false},
		{bot, "get", "secrets", "demo", authorizer.DecisionNoOpinion, "", true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s %s %s in %q", tc.who.GetName(), tc.verb, tc.res, tc.ns), func(t *testing.T) {
			d, reason := decide(t, a, tc.who, tc.verb, tc.res, tc.ns)
			if d != tc.want || !strings.Contains(reason, tc.reasonContains) || (tc.reasonMustBeAbsent && reason != "") {
				t.Errorf("decision %v reason %q, want %v reason containing %q", d, reason, tc.want, tc.reasonContains)
			}
		})
	}

	a.DeleteBinding("demo", "cm-in-demo")
	if d, _ := decide(t, a, bob, "get", "configmaps", "demo"); d != authorizer.DecisionNoOpinion {
		t.Error("a deleted RoleBinding still allows")
	}
	a.SetBinding("", "readers", roleRef("ClusterRole", "cm-reader"), subjects(userSubject("carol")))
	if d, _ := decide(t, a, alice, "list", "configmaps", ""); d != authorizer.DecisionNoOpinion {
		t.Error("a binding's removed subject is still allowed")
	}
	a.DeleteRole("", "cm-reader")
	d, reason := decide(t, a, &user.DefaultInfo{Name: "carol"}, "list", "configmaps", "")
	if d != authorizer.DecisionNoOpinion || reason != `RBAC: clusterrole.rbac.authorization.k8s.io "cm-reader" not found` {
		t.Errorf("binding to a missing role: %v %q", d, reason)
	}
}

func TestRulesFor(t *testing.T) {
	a := NewAuthorizer()
	a.SetClusterRole("basic", []rbacv1.PolicyRule{urlRule([]string{"get"}, "/healthz"), rule([]string{"create"}, "authorization.k8s.io", "selfsubjectaccessreviews")})
	a.SetRole("demo", "r", []rbacv1.PolicyRule{rule(read, "", "configmaps")})
	a.SetBinding("", "basic", roleRef("ClusterRole", "basic"), subjects(groupSubject(user.AllAuthenticated)))
	a.SetBinding("demo", "r", roleRef("Role", "r"), subjects(userSubject("alice")))
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	res, nonRes, incomplete, err := a.RulesFor(context.Background(), alice, "demo")
	if err != nil || incomplete || len(res) != 2 || len(nonRes) != 1 {
		t.Fatalf("RulesFor: %d resource rules, %d non-resource, incomplete %v, err %v; want 2, 1, false, nil", len(res), len(nonRes), incomplete, err)
	}
	if res, _, _, _ := a.RulesFor(context.Background(), alice, "other"); len(res) != 1 {
		t.Errorf("in another namespace: %d resource rules, want the cluster-wide one", len(res))
	}
}

// BenchmarkAuthorize decides with 1,000 RoleBindings and 200 ClusterRoles present, as issue 13
// measures RBAC: the index must keep it independent of how many bindings exist.
func BenchmarkAuthorize(b *testing.B) {
	a := NewAuthorizer()
	for i := range 200 {
		a.SetClusterRole(fmt.Sprintf("role-%d", i), []rbacv1.PolicyRule{rule(read, "", fmt.Sprintf("res-%d", i)), rule(readWrite, "", "configmaps")})
	}
	for i := range 1000 {
		ns := fmt.Sprintf("ns-%d", i%50)
		a.SetBinding(ns, fmt.Sprintf("b-%d", i), roleRef("ClusterRole", fmt.Sprintf("role-%d", i%200)), subjects(saSubject(ns, fmt.Sprintf("sa-%d", i))))
	}
	a.SetBinding("", "basic", roleRef("ClusterRole", "role-0"), subjects(groupSubject(user.AllAuthenticated)))
	u := &user.DefaultInfo{Name: "system:serviceaccount:ns-7:sa-7", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns-7", user.AllAuthenticated}}
	attrs := resourceAttrs("create", "", "configmaps", "", "ns-7", "")
	attrs.User = u
	b.ReportAllocs()
	for b.Loop() {
		if d, _, _ := a.Authorize(context.Background(), attrs); d != authorizer.DecisionAllow {
			b.Fatal("not allowed")
		}
	}
}
