package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Labels and annotations kube puts on its bootstrap policy.
const (
	// BootstrappingLabel marks the objects of the bootstrap policy.
	BootstrappingLabel = "kubernetes.io/bootstrapping"
	// AutoUpdateAnnotation "true" lets the server add missing rules and subjects back at start;
	// an operator sets it to "false" to keep their own changes.
	AutoUpdateAnnotation = "rbac.authorization.kubernetes.io/autoupdate"

	aggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	aggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "delete", "deletecollection", "patch", "update"}
	readWrite = append(append([]string{}, read...), write...)
)

func rule(verbs []string, group string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: []string{group}, Resources: resources}
}

func urlRule(verbs []string, urls ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, NonResourceURLs: urls}
}

// BootstrapClusterRoles are the ClusterRoles kube-apiserver creates at start that apply to a
// generic control plane, with the rules of kube's for the resources sqlkube serves. admin, edit
// and view aggregate the roles labelled for them, so that CRD authors can extend them.
func BootstrapClusterRoles() []rbacv1.ClusterRole {
	roles := []rbacv1.ClusterRole{
		clusterRole("cluster-admin", nil,
			rule([]string{"*"}, "*", "*"), urlRule([]string{"*"}, "*")),
		clusterRole("system:discovery", nil,
			urlRule([]string{"get"}, "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/")),
		clusterRole("system:basic-user", nil,
			rule([]string{"create"}, "authorization.k8s.io", "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule([]string{"create"}, "authentication.k8s.io", "selfsubjectreviews")),
		clusterRole("system:public-info-viewer", nil,
			urlRule([]string{"get"}, "/healthz", "/livez", "/readyz", "/version", "/version/")),
		clusterRole("system:monitoring", nil,
			urlRule([]string{"get"}, "/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*")),
		clusterRole("system:service-account-issuer-discovery", nil,
			urlRule([]string{"get"}, "/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/")),
		aggregated("admin", nil, aggregateToAdmin),
		aggregated("edit", map[string]string{aggregateToAdmin: "true"}, aggregateToEdit),
		aggregated("view", map[string]string{aggregateToEdit: "true"}, aggregateToView),
		clusterRole("system:aggregate-to-admin", map[string]string{aggregateToAdmin: "true"},
			rule([]string{"create"}, "authorization.k8s.io", "localsubjectaccessreviews"),
			rule(readWrite, rbacv1.GroupName, "roles", "rolebindings")),
		clusterRole("system:aggregate-to-edit", map[string]string{aggregateToEdit: "true"},
			rule(read, "", "secrets"),
			rule([]string{"impersonate"}, "", "serviceaccounts"),
			rule(write, "", "configmaps", "events", "secrets", "serviceaccounts"),
			rule([]string{"create"}, "", "serviceaccounts/token"),
			rule(write, "coordination.k8s.io", "leases")),
		clusterRole("system:aggregate-to-view", map[string]string{aggregateToView: "true"},
			rule(read, "", "configmaps", "events", "serviceaccounts"),
			rule(read, "", "namespaces", "namespaces/status"),
			rule(read, "coordination.k8s.io", "leases")),
	}
	return roles
}

// BootstrapClusterRoleBindings bind the bootstrap roles as kube-apiserver does.
func BootstrapClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	return []rbacv1.ClusterRoleBinding{
		clusterBinding("cluster-admin", user.SystemPrivilegedGroup),
		clusterBinding("system:discovery", user.AllAuthenticated),
		clusterBinding("system:basic-user", user.AllAuthenticated),
		clusterBinding("system:public-info-viewer", user.AllAuthenticated, user.AllUnauthenticated),
		clusterBinding("system:monitoring", "system:monitoring"),
		clusterBinding("system:service-account-issuer-discovery", "system:serviceaccounts"),
	}
}

func bootstrapMeta(name string, labels map[string]string) metav1.ObjectMeta {
	l := map[string]string{BootstrappingLabel: "rbac-defaults"}
	for k, v := range labels {
		l[k] = v
	}
	return metav1.ObjectMeta{Name: name, Labels: l, Annotations: map[string]string{AutoUpdateAnnotation: "true"}}
}

func clusterRole(name string, labels map[string]string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: bootstrapMeta(name, labels), Rules: rules}
}

// aggregated is a ClusterRole whose rules are those of the ClusterRoles labelled aggregateLabel.
func aggregated(name string, labels map[string]string, aggregateLabel string) rbacv1.ClusterRole {
	r := clusterRole(name, labels)
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
		{MatchLabels: map[string]string{aggregateLabel: "true"}},
	}}
	return r
}

func clusterBinding(role string, groups ...string) rbacv1.ClusterRoleBinding {
	b := rbacv1.ClusterRoleBinding{
		ObjectMeta: bootstrapMeta(role, nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
	}
	for _, g := range groups {
		b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: g})
	}
	return b
}
