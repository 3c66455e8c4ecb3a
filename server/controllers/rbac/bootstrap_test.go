package rbac

import (
	"cmp"
	"maps"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/controllers"
	"github.com/sqlkube/sqlkube/server/controllers/controllertest"
	"github.com/sqlkube/sqlkube/server/rbac"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

func newController(t *testing.T, env *controllertest.Env) *Controller {
	t.Helper()
	c, err := New(env.Deps, rbac.NewAuthorizer())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ensure makes one pass of p and fails the test unless every write succeeded.
func ensure(t *testing.T, c *Controller, p policy) {
	t.Helper()
	if !c.ensurePolicy(t.Context(), p) {
		t.Fatal("a bootstrap pass failed")
	}
}

// kubeObject is a typed RBAC or core object.
type kubeObject interface {
	runtime.Object
	metav1.Object
}

// list reads every stored object of an RBAC resource (in every namespace) as T.
func list[T any](t *testing.T, env *controllertest.Env, resource string) []T {
	t.Helper()
	var out []T
	_, err := env.Registry.List(t.Context(), env.Ref(builtin.RBACGroup, resource, "", ""), &internalversion.ListOptions{}, func(o sqlstore.Object) error {
		obj, err := decode[T](o.Value)
		if err == nil {
			out = append(out, *obj)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// get reads one object as T: RBAC unless group says otherwise.
func get[T any](t *testing.T, env *controllertest.Env, group, resource, namespace, name string) *T {
	t.Helper()
	s, err := env.Registry.Get(t.Context(), env.Ref(group, resource, namespace, name), &metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s %s/%s: %v", resource, namespace, name, err)
	}
	obj, err := decode[T](s.Value)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// write creates obj, or replaces the stored one, as an operator would.
func write(t *testing.T, env *controllertest.Env, resource string, obj kubeObject, create bool) {
	t.Helper()
	ref := env.Ref(builtin.RBACGroup, resource, obj.GetNamespace(), obj.GetName())
	u, err := controllers.ToUnstructured(obj, ref.Resource)
	if err != nil {
		t.Fatal(err)
	}
	if create {
		_, _, err = env.Registry.Create(t.Context(), ref, u, &metav1.CreateOptions{FieldManager: controllertest.FieldManager})
	} else {
		_, _, err = env.Registry.Update(t.Context(), ref, u, &metav1.UpdateOptions{FieldManager: controllertest.FieldManager})
	}
	if err != nil {
		t.Fatalf("writing %s %s: %v", resource, obj.GetName(), err)
	}
}

// policyMeta is what the policy says of an object's metadata: what the server adds (uid,
// resourceVersion, creationTimestamp, managedFields) is left out.
func policyMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, Labels: m.Labels, Annotations: m.Annotations}
}

// normalized is p with its objects' metadata as policyMeta has it, each list in name order.
func normalized(p policy) policy {
	byName := func(a, b metav1.Object) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	}
	out := policy{roles: map[string][]rbacv1.Role{}, roleBindings: map[string][]rbacv1.RoleBinding{}}
	for _, r := range p.clusterRoles {
		out.clusterRoles = append(out.clusterRoles, rbacv1.ClusterRole{ObjectMeta: policyMeta(r.ObjectMeta), Rules: r.Rules, AggregationRule: r.AggregationRule})
	}
	for _, b := range p.clusterRoleBindings {
		out.clusterRoleBindings = append(out.clusterRoleBindings, rbacv1.ClusterRoleBinding{ObjectMeta: policyMeta(b.ObjectMeta), Subjects: b.Subjects, RoleRef: b.RoleRef})
	}
	for ns, roles := range p.roles {
		for _, r := range roles {
			out.roles[ns] = append(out.roles[ns], rbacv1.Role{ObjectMeta: policyMeta(r.ObjectMeta), Rules: r.Rules})
		}
		slices.SortFunc(out.roles[ns], func(a, b rbacv1.Role) int { return byName(&a, &b) })
	}
	for ns, bindings := range p.roleBindings {
		for _, b := range bindings {
			out.roleBindings[ns] = append(out.roleBindings[ns], rbacv1.RoleBinding{ObjectMeta: policyMeta(b.ObjectMeta), Subjects: b.Subjects, RoleRef: b.RoleRef})
		}
		slices.SortFunc(out.roleBindings[ns], func(a, b rbacv1.RoleBinding) int { return byName(&a, &b) })
	}
	slices.SortFunc(out.clusterRoles, func(a, b rbacv1.ClusterRole) int { return byName(&a, &b) })
	slices.SortFunc(out.clusterRoleBindings, func(a, b rbacv1.ClusterRoleBinding) int { return byName(&a, &b) })
	return out
}

// storedPolicy is every RBAC object stored, as normalized has a policy.
func storedPolicy(t *testing.T, env *controllertest.Env) policy {
	t.Helper()
	p := policy{clusterRoles: list[rbacv1.ClusterRole](t, env, "clusterroles"),
		clusterRoleBindings: list[rbacv1.ClusterRoleBinding](t, env, "clusterrolebindings"),
		roles:               map[string][]rbacv1.Role{}, roleBindings: map[string][]rbacv1.RoleBinding{}}
	for _, r := range list[rbacv1.Role](t, env, "roles") {
		p.roles[r.Namespace] = append(p.roles[r.Namespace], r)
	}
	for _, b := range list[rbacv1.RoleBinding](t, env, "rolebindings") {
		p.roleBindings[b.Namespace] = append(p.roleBindings[b.Namespace], b)
	}
	return normalized(p)
}

// diffPolicy reports each object of want that got differs in, or lacks, and each it has beyond.
func diffPolicy(t *testing.T, got, want policy) {
	t.Helper()
	diffObjects(t, "ClusterRole", got.clusterRoles, want.clusterRoles)
	diffObjects(t, "ClusterRoleBinding", got.clusterRoleBindings, want.clusterRoleBindings)
	for _, ns := range slices.Sorted(maps.Keys(want.roles)) {
		diffObjects(t, "Role in "+ns, got.roles[ns], want.roles[ns])
	}
	for _, ns := range slices.Sorted(maps.Keys(want.roleBindings)) {
		diffObjects(t, "RoleBinding in "+ns, got.roleBindings[ns], want.roleBindings[ns])
	}
	if !slices.Equal(slices.Sorted(maps.Keys(got.roles)), slices.Sorted(maps.Keys(want.roles))) ||
		!slices.Equal(slices.Sorted(maps.Keys(got.roleBindings)), slices.Sorted(maps.Keys(want.roleBindings))) {
		t.Errorf("namespaces with roles %v and bindings %v, want %v and %v", slices.Sorted(maps.Keys(got.roles)),
			slices.Sorted(maps.Keys(got.roleBindings)), slices.Sorted(maps.Keys(want.roles)), slices.Sorted(maps.Keys(want.roleBindings)))
	}
}

func diffObjects[T any](t *testing.T, kind string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d of %s stored, want %d", len(got), kind, len(want))
	}
	for i := range min(len(got), len(want)) {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("%s\n%+v\nwant\n%+v", kind, got[i], want[i])
		}
	}
}

// TestBootstrapWritesKubesPolicy: a pass stores kube-apiserver v1.37.2's bootstrap policy, every
// role, binding and rule of kube's bootstrappolicy package with kube's default feature gates,
// written as kube-apiserver; a second pass (the next start, another replica) writes nothing.
func TestBootstrapWritesKubesPolicy(t *testing.T) {
	controllertest.Backends(t, func(t *testing.T, env *controllertest.Env) {
		c := newController(t, env)
		ensure(t, c, kubePolicy())
		want := normalized(kubePolicy())
		// kube-apiserver v1.37.2 creates these many, with its default feature gates.
		counts := []int{len(want.clusterRoles), len(want.clusterRoleBindings), len(want.roles["kube-system"]),
			len(want.roles["kube-public"]), len(want.roleBindings["kube-system"]), len(want.roleBindings["kube-public"])}
		if !slices.Equal(counts, []int{73, 54, 6, 1, 6, 1}) {
			t.Errorf("kube's policy has %v cluster roles, bindings, roles and bindings in kube-system and kube-public; kube-apiserver v1.37.2 writes 73, 54, 6, 1, 6, 1", counts)
		}
		diffPolicy(t, storedPolicy(t, env), want)

		edit := get[rbacv1.ClusterRole](t, env, builtin.RBACGroup, "clusterroles", "", "system:aggregate-to-edit")
		if m := edit.ManagedFields; len(m) != 1 || m[0].Manager != bootstrapManager || m[0].Operation != metav1.ManagedFieldsOperationUpdate {
			t.Errorf("system:aggregate-to-edit's managedFields %+v, want one Update by %s", m, bootstrapManager)
		}
		before, _ := env.Store.CurrentRevision(t.Context())
		ensure(t, newController(t, env), kubePolicy())
		if after, _ := env.Store.CurrentRevision(t.Context()); after != before {
			t.Errorf("a second pass wrote revisions %d..%d", before, after)
		}
	})
}

var (
	alice         = rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}
	authenticated = rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"}
)

func urls(verb string, paths ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: []string{verb}, NonResourceURLs: paths}
}

// TestBootstrapReconciles: what an operator changed is reconciled at the next start as
// kube-apiserver reconciles it: missing rules, labels and subjects are added back after the
// operator's own, which stay; a deleted role comes back; a binding to another role is made
// again; an object annotated autoupdate "false" is left alone.
func TestBootstrapReconciles(t *testing.T) {
	controllertest.Backends(t, func(t *testing.T, env *controllertest.Env) {
		c := newController(t, env)
		ensure(t, c, kubePolicy())
		kube := normalized(kubePolicy())

		// public-info-viewer loses /version/ and gains /metrics and a label.
		viewer := get[rbacv1.ClusterRole](t, env, builtin.RBACGroup, "clusterroles", "", "system:public-info-viewer")
		viewer.Rules = []rbacv1.PolicyRule{urls("get", "/healthz", "/livez", "/readyz", "/version"), urls("get", "/metrics")}
		viewer.Labels["team"] = "ops"
		write(t, env, "clusterroles", viewer, false)
		// discovery, protected, loses all but /api.
		discovery := get[rbacv1.ClusterRole](t, env, builtin.RBACGroup, "clusterroles", "", "system:discovery")
		discovery.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
		discovery.Rules = []rbacv1.PolicyRule{urls("get", "/api")}
		write(t, env, "clusterroles", discovery, false)
		// basic-user's binding binds alice instead of every authenticated user.
		basic := get[rbacv1.ClusterRoleBinding](t, env, builtin.RBACGroup, "clusterrolebindings", "", "system:basic-user")
		basic.Subjects = []rbacv1.Subject{alice}
		write(t, env, "clusterrolebindings", basic, false)
		// monitoring's binding is made again to bind view; node-proxier's role and a role in
		// kube-system are deleted.
		env.Delete(env.Ref(builtin.RBACGroup, "clusterrolebindings", "", "system:monitoring"), "")
		write(t, env, "clusterrolebindings", &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "system:monitoring"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{alice}}, true)
		env.Delete(env.Ref(builtin.RBACGroup, "clusterroles", "", "system:node-proxier"), "")
		env.Delete(env.Ref(builtin.RBACGroup, "roles", "kube-system", "extension-apiserver-authentication-reader"), "")

		ensure(t, newController(t, env), kubePolicy())

		want := normalized(kubePolicy())
		for i, r := range want.clusterRoles {
			switch r.Name {
			case "system:public-info-viewer":
				// kube's reconciler adds each missing rule broken down to one verb and one path.
				want.clusterRoles[i].Rules = append(slices.Clone(viewer.Rules), urls("get", "/version/"))
				want.clusterRoles[i].Labels = viewer.Labels
			case "system:discovery":
				want.clusterRoles[i] = rbacv1.ClusterRole{ObjectMeta: policyMeta(discovery.ObjectMeta), Rules: discovery.Rules}
			}
		}
		for i, b := range want.clusterRoleBindings {
			if b.Name == "system:basic-user" {
				want.clusterRoleBindings[i].Subjects = []rbacv1.Subject{alice, authenticated}
			}
		}
		if reflect.DeepEqual(want, kube) {
			t.Fatal("the expected policy is kube's: the test changes nothing")
		}
		diffPolicy(t, storedPolicy(t, env), want)
	})
}

// TestBootstrapCreatesNamespaces: a Role or RoleBinding of the policy in a namespace that does
// not exist creates it, as kube-apiserver does.
func TestBootstrapCreatesNamespaces(t *testing.T) {
	env := controllertest.New(t, sqltest.SQLiteDSN(t))
	role := rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: "fresh"}, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}}
	binding := rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: "later"}, Subjects: []rbacv1.Subject{alice},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"}}
	ensure(t, newController(t, env), policy{roles: map[string][]rbacv1.Role{"fresh": {role}}, roleBindings: map[string][]rbacv1.RoleBinding{"later": {binding}}})
	for _, ns := range []string{"fresh", "later"} {
		if got := get[corev1.Namespace](t, env, "", "namespaces", "", ns); got.Status.Phase != corev1.NamespaceActive {
			t.Errorf("namespace %s: %+v", ns, got)
		}
	}
	got := storedPolicy(t, env)
	want := normalized(policy{roles: map[string][]rbacv1.Role{"fresh": {role}}, roleBindings: map[string][]rbacv1.RoleBinding{"later": {binding}}})
	diffPolicy(t, got, want)
}

// TestBootstrapPrimesMovedRules: a role whose rules moved to an aggregated role (kube's edit to
// system:aggregate-to-edit) is copied to the new name first, so that rules an operator added to
// it are kept; a binding split in two gives the new one its subjects, labels and annotations.
func TestBootstrapPrimesMovedRules(t *testing.T) {
	env := controllertest.New(t, sqltest.SQLiteDSN(t))
	old := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "old-edit", Labels: map[string]string{"team": "ops"}},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}}}
	write(t, env, "clusterroles", old, true)
	oldBinding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "old-binding", Annotations: map[string]string{"note": "kept"}},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "old-edit"}, Subjects: []rbacv1.Subject{alice}}
	write(t, env, "clusterrolebindings", oldBinding, true)
	split := rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "new-binding"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "new-edit"}, Subjects: []rbacv1.Subject{authenticated}}

	ensure(t, newController(t, env), policy{clusterRolesToAggregate: map[string]string{"old-edit": "new-edit"},
		clusterRoleBindingsToSplit: map[string]rbacv1.ClusterRoleBinding{"old-binding": split}})

	want := normalized(policy{
		clusterRoles: []rbacv1.ClusterRole{*old, {ObjectMeta: metav1.ObjectMeta{Name: "new-edit", Labels: old.Labels}, Rules: old.Rules}},
		clusterRoleBindings: []rbacv1.ClusterRoleBinding{*oldBinding, {ObjectMeta: metav1.ObjectMeta{Name: "new-binding", Annotations: oldBinding.Annotations},
			RoleRef: split.RoleRef, Subjects: oldBinding.Subjects}}})
	diffPolicy(t, storedPolicy(t, env), want)
}
