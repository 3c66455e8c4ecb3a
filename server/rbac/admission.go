package rbac

import (
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// Escalation is kube's escalation prevention, which its RBAC storage runs on every create and
// update of the four RBAC kinds (through create, update, patch, apply, dry run or not): a user
// may write a Role or ClusterRole only with rules it already holds (or the escalate verb on
// it), and a binding only to a role whose rules it holds (or the bind verb on that role).
// Members of system:masters may do anything; an update of only the fields the garbage
// collector writes is not checked.
type Escalation struct {
	// Authorizer decides escalate and bind; RBAC resolves the writer's rules.
	Authorizer authorizer.UnconditionalAuthorizer
	RBAC       *Authorizer
}

// fullAuthority is what a user must hold to write a ClusterRole's aggregationRule: it gathers
// any rule, so only cluster-admin may choose what it selects.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{rbacv1.VerbAll}, APIGroups: []string{rbacv1.APIGroupAll}, Resources: []string{rbacv1.ResourceAll}},
	{Verbs: []string{rbacv1.VerbAll}, NonResourceURLs: []string{rbacv1.NonResourceAll}},
}

// Check refuses a create (old nil) or update of an RBAC object in resource ("roles",
// "clusterroles", "rolebindings", "clusterrolebindings") of namespace ("" for the cluster)
// that would grant more than the writer holds, as kube's RBAC storage does, with its errors.
// old is the object as stored. Writes without a user (the server's own) are not checked.
func (e *Escalation) Check(ctx context.Context, resource, namespace string, obj, old *unstructured.Unstructured) error {
	u, ok := genericrequest.UserFrom(ctx)
	if !ok || isMaster(u) {
		return nil
	}
	switch resource {
	case "roles", "clusterroles":
		if e.mayEscalate(ctx, u) {
			return nil
		}
	case "rolebindings", "clusterrolebindings":
	default:
		return nil
	}
	if old != nil {
		if gcOnly, err := OnlyGCFieldsChange(resource, obj, old); err != nil || gcOnly {
			return err
		}
	}
	if resource == "roles" || resource == "clusterroles" {
		return e.checkRole(u, resource, namespace, obj, old)
	}
	return e.checkBinding(ctx, u, resource, namespace, obj)
}

func isMaster(u user.Info) bool {
	for _, g := range u.GetGroups() {
		if g == user.SystemPrivilegedGroup {
			return true
		}
	}
	return false
}

// roleFields are what the check reads of a Role or ClusterRole.
type roleFields struct {
	Rules           []rbacv1.PolicyRule     `json:"rules"`
	AggregationRule *rbacv1.AggregationRule `json:"aggregationRule"`
}

// aggregates reports whether the role has an aggregationRule that selects anything.
func (r *roleFields) aggregates() bool {
	return r.AggregationRule != nil && len(r.AggregationRule.ClusterRoleSelectors) > 0
}

type bindingFields struct {
	RoleRef rbacv1.RoleRef `json:"roleRef"`
}

// checkRole: the writer must hold every rule of the role, and, to set or change a ClusterRole's
// aggregationRule (the old one counts: removing it could widen the role), full authority.
func (e *Escalation) checkRole(u user.Info, resource, namespace string, obj, old *unstructured.Unstructured) error {
	var role, before roleFields
	if err := fromUnstructured(obj, &role); err != nil {
		return err
	}
	if old != nil {
		if err := fromUnstructured(old, &before); err != nil {
			return err
		}
	}
	gr := rbacv1.Resource(resource)
	if err := e.confirmNoEscalation(u, namespace, role.Rules); err != nil {
		return apierrors.NewForbidden(gr, obj.GetName(), err)
	}
	if resource == "clusterroles" && (role.aggregates() || before.aggregates()) {
		if e.confirmNoEscalation(u, "", fullAuthority) != nil {
			return apierrors.NewForbidden(gr, obj.GetName(), errors.New("must have cluster-admin privileges to use the aggregationRule"))
		}
	}
	return nil
}

// checkBinding: the writer must have bind on the role or hold all its rules. A role that does
// not exist is kube's 404 for it, unless the writer may bind it. Kinds of role other than
// Role and ClusterRole are left to validation, which refuses them.
func (e *Escalation) checkBinding(ctx context.Context, u user.Info, resource, namespace string, obj *unstructured.Unstructured) error {
	var b bindingFields
	if err := fromUnstructured(obj, &b); err != nil {
		return err
	}
	if b.RoleRef.Kind != "Role" && b.RoleRef.Kind != "ClusterRole" || e.mayBind(ctx, u, b.RoleRef, namespace) {
		return nil
	}
	e.RBAC.mu.RLock()
	rules, found := e.RBAC.roleRules(b.RoleRef, namespace)
	e.RBAC.mu.RUnlock()
	if !found {
		return roleNotFound(b.RoleRef, true)
	}
	if err := e.confirmNoEscalation(u, namespace, rules); err != nil {
		return apierrors.NewForbidden(rbacv1.Resource(resource), obj.GetName(), err)
	}
	return nil
}

// confirmNoEscalation is nil if u holds every rule cluster-wide or in namespace, else kube's
// error listing what it lacks (and the roles of its bindings that do not exist).
func (e *Escalation) confirmNoEscalation(u user.Info, namespace string, rules []rbacv1.PolicyRule) error {
	owned, missingRoles := e.RBAC.Rules(u, namespace, true)
	ok, missing := validation.Covers(owned, rules)
	if ok {
		return nil
	}
	return EscalationError(u, missing, missingRoles)
}

// mayEscalate asks the authorizer whether u may escalate the role of the request, as kube
// does: with the request's group, resource, namespace and name (none on a create by POST).
func (e *Escalation) mayEscalate(ctx context.Context, u user.Info) bool {
	info, ok := genericrequest.RequestInfoFrom(ctx)
	if !ok || !info.IsResourceRequest || info.APIGroup != rbacv1.GroupName {
		return false
	}
	return e.allowed(ctx, authorizer.AttributesRecord{User: u, Verb: "escalate", APIGroup: info.APIGroup, APIVersion: "*",
		Resource: info.Resource, Namespace: info.Namespace, Name: info.Name, ResourceRequest: true})
}

// mayBind asks the authorizer whether u may bind the role ref in the binding's namespace.
func (e *Escalation) mayBind(ctx context.Context, u user.Info, ref rbacv1.RoleRef, namespace string) bool {
	resource := "clusterroles"
	if ref.Kind == "Role" {
		resource = "roles"
	}
	return e.allowed(ctx, authorizer.AttributesRecord{User: u, Verb: "bind", APIGroup: ref.APIGroup, APIVersion: "*",
		Resource: resource, Namespace: namespace, Name: ref.Name, ResourceRequest: true})
}

func (e *Escalation) allowed(ctx context.Context, attrs authorizer.AttributesRecord) bool {
	d, _, _ := e.Authorizer.Authorize(ctx, attrs)
	return d == authorizer.DecisionAllow
}

// OnlyGCFieldsChange reports whether an update of obj (stored as old) changes only what the
// garbage collector writes, ownerReferences and finalizers (or selfLink and managedFields,
// which grant nothing): kube's IsOnlyMutatingGCFields, under which an update is not checked.
// The objects are compared as kube compares them, typed and semantically.
func OnlyGCFieldsChange(resource string, obj, old *unstructured.Unstructured) (bool, error) {
	newTyped, oldTyped := typedObject(resource), typedObject(resource)
	if newTyped == nil {
		return false, fmt.Errorf("%s is not an RBAC resource", resource)
	}
	if err := fromUnstructured(obj, newTyped); err != nil {
		return false, err
	}
	if err := fromUnstructured(old, oldTyped); err != nil {
		return false, err
	}
	newTyped.SetOwnerReferences(oldTyped.GetOwnerReferences())
	newTyped.SetFinalizers(oldTyped.GetFinalizers())
	newTyped.SetSelfLink(oldTyped.GetSelfLink())
	newTyped.SetManagedFields(oldTyped.GetManagedFields())
	return equality.Semantic.DeepEqual(newTyped, oldTyped), nil
}

// typedObject is an empty object of an RBAC resource, nil for another resource.
func typedObject(resource string) metav1.Object {
	switch resource {
	case "roles":
		return &rbacv1.Role{}
	case "clusterroles":
		return &rbacv1.ClusterRole{}
	case "rolebindings":
		return &rbacv1.RoleBinding{}
	case "clusterrolebindings":
		return &rbacv1.ClusterRoleBinding{}
	}
	return nil
}

func fromUnstructured(u *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}
