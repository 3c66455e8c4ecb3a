package builtin

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	_ "k8s.io/kubernetes/pkg/apis/rbac/install" // rbac's defaults and conversions in legacyscheme.Scheme
	"k8s.io/kubernetes/pkg/registry/rbac/clusterrole"
	"k8s.io/kubernetes/pkg/registry/rbac/clusterrolebinding"
	"k8s.io/kubernetes/pkg/registry/rbac/role"
	"k8s.io/kubernetes/pkg/registry/rbac/rolebinding"

	"github.com/sqlkube/sqlkube/server/resource"
)

// RBACGroup serves Roles, ClusterRoles and their bindings.
const RBACGroup = rbacv1.GroupName

// rbacResources are the rbac.authorization.k8s.io/v1 types, served with kube's own strategies
// (kube), and printed as kube's storage of them prints them (the default columns for the roles).
// kube's REST storage of them also refuses a write that grants more than its writer
// holds; server/rbac's admission does that here.
func rbacResources() []*resource.Resource {
	return []*resource.Resource{
		builtin(RBACGroup, "v1", "roles", "Role", true, verbsAll, kube[rbacv1.Role](kubeRules{
			strategy: role.Strategy, table: rest.NewDefaultTableConvertor(rbacv1.Resource("roles")),
		}), nil),
		builtin(RBACGroup, "v1", "clusterroles", "ClusterRole", false, verbsAll, kube[rbacv1.ClusterRole](kubeRules{
			strategy: clusterrole.Strategy, table: rest.NewDefaultTableConvertor(rbacv1.Resource("clusterroles")),
		}), nil),
		builtin(RBACGroup, "v1", "rolebindings", "RoleBinding", true, verbsAll, kube[rbacv1.RoleBinding](kubeRules{strategy: rolebinding.Strategy}), nil),
		builtin(RBACGroup, "v1", "clusterrolebindings", "ClusterRoleBinding", false, verbsAll, kube[rbacv1.ClusterRoleBinding](kubeRules{
			strategy: clusterrolebinding.Strategy,
		}), nil),
	}
}
