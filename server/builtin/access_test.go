package builtin

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sqlkube/sqlkube/server/resource"
)

const adminAccessClaim = `{apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {name: debug, namespace: tools},
  spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com, adminAccess: true}}]}}}`

// TestResourceClaimsAskTheBoundNamespaces: kube's ResourceClaim strategy reads the claim's
// namespace through the namespace client the server binds: before it is bound, admin access is
// an internal error; then it needs the namespace's admin-access label.
func TestResourceClaimsAskTheBoundNamespaces(t *testing.T) {
	access := &Access{}
	var claims *resource.Resource
	for _, r := range Resources(func(*resource.Resource) {}, access) {
		if r.StorageName == "resourceclaims."+ResourceGroup {
			claims = r
		}
	}
	obj := decodedForValidation(t, claims, adminAccessClaim)
	path := "spec.devices.requests[0].adminAccess"
	errs := claims.Strategy.Validate(t.Context(), obj)
	if len(errs) != 1 || errs[0].Field != path || errs[0].Detail != "could not retrieve namespace to verify admin access: "+errUnbound.Error() {
		t.Errorf("unbound: %v", errs)
	}

	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tools"}}
	client := fake.NewClientset(namespace)
	access.Bind(client.CoreV1().Namespaces(), authorizerfactory.NewAlwaysAllowAuthorizer())
	errs = claims.Strategy.Validate(t.Context(), obj)
	want := "admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace"
	if len(errs) != 1 || errs[0].Field != path || errs[0].Detail != want {
		t.Errorf("an unlabelled namespace: %v", errs)
	}

	namespace.Labels = map[string]string{"resource.kubernetes.io/admin-access": "true"}
	if _, err := client.CoreV1().Namespaces().Update(t.Context(), namespace, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if errs := claims.Strategy.Validate(t.Context(), obj); len(errs) != 0 {
		t.Errorf("a labelled namespace: %s", cmp.Diff(nil, errs))
	}
}

const paramPolicy = `{apiVersion: admissionregistration.k8s.io/v1, kind: ValidatingAdmissionPolicy, metadata: {name: p},
  spec: {paramKind: {apiVersion: v1, kind: ConfigMap}, validations: [{expression: "true"}],
  matchConstraints: {resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]}}}`

// TestAdmissionPoliciesAuthorizeTheirParams: kube's ValidatingAdmissionPolicy strategy asks the
// bound authorizer whether a user writing a policy may read its paramKind; before the binding,
// and for a write no user makes, nothing is authorized; system:masters needs no permission.
func TestAdmissionPoliciesAuthorizeTheirParams(t *testing.T) {
	access := &Access{}
	var policies *resource.Resource
	for _, r := range Resources(func(*resource.Resource) {}, access) {
		if r.StorageName == validatingPolicies {
			policies = r
		}
	}
	obj := decodedForValidation(t, policies, paramPolicy)
	alice := genericrequest.WithUser(t.Context(), &user.DefaultInfo{Name: "alice"})
	if errs := policies.Strategy.Validate(alice, obj); len(errs) != 0 {
		t.Errorf("unbound: %v", errs)
	}
	access.Bind(fake.NewClientset().CoreV1().Namespaces(), authorizerfactory.NewAlwaysDenyAuthorizer())
	errs := policies.Strategy.Validate(alice, obj)
	// kube prints the user.Info as it is (%v).
	want := `user &{alice  [] map[]} must have "get" permission on all objects of the referenced paramKind (kind=ConfigMap, apiVersion=v1)`
	if len(errs) != 1 || errs[0].Field != "spec.paramKind" || errs[0].Detail != want {
		t.Errorf("denied: %v", errs)
	}
	admin := genericrequest.WithUser(t.Context(), &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}})
	for name, ctx := range map[string]context.Context{"no user": t.Context(), "system:masters": admin} {
		if errs := policies.Strategy.Validate(ctx, obj); len(errs) != 0 {
			t.Errorf("%s: %v", name, errs)
		}
	}
}
