package rbac

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: content}
}

// TestOnlyGCFieldsChange: ownerReferences, finalizers, selfLink and managedFields may change
// unchecked; anything else, in metadata or not, is a change to check. Empty and missing lists
// are the same (kube compares semantically).
func TestOnlyGCFieldsChange(t *testing.T) {
	stored := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "b", UID: "u1", ResourceVersion: "7", Labels: map[string]string{"a": "b"}},
		RoleRef:    roleRef("ClusterRole", "view"),
		Subjects:   subjects(userSubject("alice")),
	}
	tests := []struct {
		name   string
		change func(b *rbacv1.ClusterRoleBinding)
		want   bool
	}{
		{"nothing", func(*rbacv1.ClusterRoleBinding) {}, true},
		{"ownerReferences", func(b *rbacv1.ClusterRoleBinding) {
			b.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: "demo", UID: "u2"}}
		}, true},
		{"finalizers", func(b *rbacv1.ClusterRoleBinding) { b.Finalizers = []string{"example.com/keep"} }, true},
		{"managedFields", func(b *rbacv1.ClusterRoleBinding) {
			b.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationApply}}
		}, true},
		{"selfLink", func(b *rbacv1.ClusterRoleBinding) { b.SelfLink = "/x" }, true},
		{"a subject", func(b *rbacv1.ClusterRoleBinding) { b.Subjects = append(b.Subjects, userSubject("mallory")) }, false},
		{"a label", func(b *rbacv1.ClusterRoleBinding) { b.Labels["c"] = "d" }, false},
		{"an annotation", func(b *rbacv1.ClusterRoleBinding) { b.Annotations = map[string]string{"c": "d"} }, false},
		{"finalizers and a subject", func(b *rbacv1.ClusterRoleBinding) {
			b.Finalizers = []string{"example.com/keep"}
			b.Subjects = nil
		}, false},
		{"resourceVersion", func(b *rbacv1.ClusterRoleBinding) { b.ResourceVersion = "" }, false},
		{"uid", func(b *rbacv1.ClusterRoleBinding) { b.UID = "" }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			updated := stored.DeepCopy()
			tc.change(updated)
			got, err := OnlyGCFieldsChange("clusterrolebindings", toUnstructured(t, updated), toUnstructured(t, stored))
			if err != nil || got != tc.want {
				t.Errorf("OnlyGCFieldsChange = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	empty := stored.DeepCopy()
	empty.Subjects = []rbacv1.Subject{}
	none := stored.DeepCopy()
	none.Subjects = nil
	if got, _ := OnlyGCFieldsChange("clusterrolebindings", toUnstructured(t, empty), toUnstructured(t, none)); !got {
		t.Error("an empty subject list differs from none")
	}
}

// allowing is an authorizer that allows exactly the verbs given (escalate, bind) on anything,
// and records what it was asked.
func allowing(asked *[]authorizer.AttributesRecord, verbs ...string) authorizer.AuthorizerFunc {
	return func(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
		*asked = append(*asked, attrs.(authorizer.AttributesRecord))
		if slices.Contains(verbs, attrs.GetVerb()) {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	}
}

// TestEscalationCheck: kube's decisions for roles and bindings, with its errors, written as a
// user holding some rules (the RBAC authorizer) and maybe escalate or bind (the chain).
func TestEscalationCheck(t *testing.T) {
	a := NewAuthorizer()
	a.SetClusterRole("cm-reader", []rbacv1.PolicyRule{rule(read, "", "configmaps")})
	a.SetClusterRole("everything", fullAuthority)
	a.SetClusterRole("secret-reader", []rbacv1.PolicyRule{rule(read, "", "secrets")})
	a.SetBinding("", "alice-cm", roleRef("ClusterRole", "cm-reader"), subjects(userSubject("alice")))
	a.SetBinding("", "root", roleRef("ClusterRole", "everything"), subjects(userSubject("root")))
	a.SetBinding("demo", "alice-gone", roleRef("Role", "gone"), subjects(userSubject("alice")))
	a.SetBinding("demo", "bob-a", roleRef("Role", "gone"), subjects(userSubject("bob"), groupSubject("bobs")))
	a.SetBinding("", "bob-z", roleRef("ClusterRole", "gone-z"), subjects(userSubject("bob")))
	a.SetBinding("", "bob-y", roleRef("ClusterRole", "gone-y"), subjects(groupSubject("bobs")))
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	bob := &user.DefaultInfo{Name: "bob", Groups: []string{"bobs"}}
	root := &user.DefaultInfo{Name: "root"}
	master := &user.DefaultInfo{Name: "m", Groups: []string{user.SystemPrivilegedGroup}}

	clusterRole := func(rules []rbacv1.PolicyRule, aggregate bool) *unstructured.Unstructured {
		r := &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: "r"}, Rules: rules}
		if aggregate {
			r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"x": "y"}}}}
		}
		return toUnstructured(t, r)
	}
	binding := func(ref rbacv1.RoleRef) *unstructured.Unstructured {
		return toUnstructured(t, &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "demo"}, RoleRef: ref, Subjects: subjects(userSubject("alice"))})
	}
	cmRules := []rbacv1.PolicyRule{rule(read, "", "configmaps")}
	secretRules := []rbacv1.PolicyRule{rule(read, "", "secrets")}
	lacksSecrets := apierrors.NewForbidden(rbacv1.Resource("clusterroles"), "r", errors.New(`user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "watch"]}`))
	aggregationRefused := apierrors.NewForbidden(rbacv1.Resource("clusterroles"), "r", errors.New("must have cluster-admin privileges to use the aggregationRule"))
	tests := []struct {
		name         string
		who          user.Info
		allowed      []string
		resource, ns string
		obj, old     *unstructured.Unstructured
		want         error
	}{
		{"a role of held rules", alice, nil, "clusterroles", "", clusterRole(cmRules, false), nil, nil},
		{"a role of rules not held", alice, nil, "clusterroles", "", clusterRole(secretRules, false), nil, lacksSecrets},
		{"update to rules not held", alice, nil, "clusterroles", "", clusterRole(secretRules, false), clusterRole(nil, false), lacksSecrets},
		{"unchanged rules not held", alice, nil, "clusterroles", "", clusterRole(secretRules, false), clusterRole(secretRules, false), nil},
		{"escalate", alice, []string{"escalate"}, "clusterroles", "", clusterRole(secretRules, true), nil, nil},
		{"system:masters", master, nil, "clusterroles", "", clusterRole(secretRules, true), nil, nil},
		{"aggregationRule without full authority", alice, nil, "clusterroles", "", clusterRole(cmRules, true), nil, aggregationRefused},
		{"removing an aggregationRule without full authority", alice, nil, "clusterroles", "", clusterRole(nil, false), clusterRole(nil, true), aggregationRefused},
		{"aggregationRule with full authority", root, nil, "clusterroles", "", clusterRole(nil, true), nil, nil},
		{"rules checked before the aggregationRule", alice, nil, "clusterroles", "", clusterRole(secretRules, true), nil, lacksSecrets},
		{"binding a role of held rules", alice, nil, "rolebindings", "demo", binding(roleRef("ClusterRole", "cm-reader")), nil, nil},
		{"binding a role of rules not held", alice, nil, "rolebindings", "demo", binding(roleRef("ClusterRole", "secret-reader")), nil,
			apierrors.NewForbidden(rbacv1.Resource("rolebindings"), "b", errors.New(`user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "watch"]}; resolution errors: [roles.rbac.authorization.k8s.io "gone" not found]`))},
		{"every missing role, cluster bindings first, by name", bob, nil, "rolebindings", "demo", binding(roleRef("ClusterRole", "secret-reader")), nil,
			apierrors.NewForbidden(rbacv1.Resource("rolebindings"), "b", errors.New(`user "bob" (groups=["bobs"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "watch"]}; resolution errors: [[clusterroles.rbac.authorization.k8s.io "gone-y" not found, `+
				`clusterroles.rbac.authorization.k8s.io "gone-z" not found, roles.rbac.authorization.k8s.io "gone" not found]]`))},
		{"bind", alice, []string{"bind"}, "rolebindings", "demo", binding(roleRef("ClusterRole", "secret-reader")), nil, nil},
		{"binding a missing role", alice, nil, "rolebindings", "demo", binding(roleRef("Role", "nope")), nil,
			apierrors.NewNotFound(rbacv1.Resource("roles"), "nope")},
		{"bind on a missing role", alice, []string{"bind"}, "rolebindings", "demo", binding(roleRef("Role", "nope")), nil, nil},
		{"escalate is not bind", alice, []string{"escalate"}, "rolebindings", "demo", binding(roleRef("ClusterRole", "secret-reader")), nil,
			apierrors.NewForbidden(rbacv1.Resource("rolebindings"), "b", errors.New(`user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "watch"]}; resolution errors: [roles.rbac.authorization.k8s.io "gone" not found]`))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var asked []authorizer.AttributesRecord
			e := &Escalation{Authorizer: allowing(&asked, tc.allowed...), RBAC: a}
			ctx := genericrequest.WithUser(context.Background(), tc.who)
			ctx = genericrequest.WithRequestInfo(ctx, &genericrequest.RequestInfo{IsResourceRequest: true, APIGroup: rbacv1.GroupName,
				Resource: tc.resource, Namespace: tc.ns})
			got := e.Check(ctx, tc.resource, tc.ns, tc.obj, tc.old)
			if tc.want == nil {
				if got != nil {
					t.Fatalf("refused: %v", got)
				}
				return
			}
			var status *apierrors.StatusError
			if !errors.As(got, &status) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if diff := cmp.Diff(tc.want.(*apierrors.StatusError).ErrStatus, status.ErrStatus); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestEscalateAndBindAttributes: escalate is asked of the request's role (any version; no name
// on a create by POST), bind of the role the binding refers to, in the binding's namespace.
func TestEscalateAndBindAttributes(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice"}
	var asked []authorizer.AttributesRecord
	e := &Escalation{Authorizer: allowing(&asked, "escalate", "bind"), RBAC: NewAuthorizer()}
	ctx := genericrequest.WithUser(context.Background(), alice)
	role := toUnstructured(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "demo"}})
	post := genericrequest.WithRequestInfo(ctx, &genericrequest.RequestInfo{IsResourceRequest: true, Verb: "create",
		APIGroup: rbacv1.GroupName, APIVersion: "v1", Resource: "roles", Namespace: "demo"})
	if err := e.Check(post, "roles", "demo", role, nil); err != nil {
		t.Fatal(err)
	}
	put := genericrequest.WithRequestInfo(ctx, &genericrequest.RequestInfo{IsResourceRequest: true, Verb: "update",
		APIGroup: rbacv1.GroupName, APIVersion: "v1", Resource: "roles", Namespace: "demo", Name: "r"})
	if err := e.Check(put, "roles", "demo", role, toUnstructured(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "demo"},
		Rules: []rbacv1.PolicyRule{rule(read, "", "secrets")}})); err != nil {
		t.Fatal(err)
	}
	b := toUnstructured(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "demo"}, RoleRef: roleRef("ClusterRole", "view")})
	if err := e.Check(put, "rolebindings", "demo", b, nil); err != nil {
		t.Fatal(err)
	}
	escalate := authorizer.AttributesRecord{User: alice, Verb: "escalate", APIGroup: rbacv1.GroupName, APIVersion: "*",
		Resource: "roles", Namespace: "demo", ResourceRequest: true}
	escalateNamed := escalate
	escalateNamed.Name = "r"
	want := []authorizer.AttributesRecord{escalate, escalateNamed, {User: alice, Verb: "bind", APIGroup: rbacv1.GroupName, APIVersion: "*",
		Resource: "clusterroles", Namespace: "demo", Name: "view", ResourceRequest: true}}
	if diff := cmp.Diff(want, asked); diff != "" {
		t.Errorf("asked (-want +got):\n%s", diff)
	}
}
