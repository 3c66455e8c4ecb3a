package rbac

import (
	"context"
	"errors"
	"reflect"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// Escalation is kube's escalation prevention: a user may write a Role or ClusterRole only with
// rules it already holds (or the escalate verb on it), and a binding only to a role whose rules
// it holds (or the bind verb on that role). Members of system:masters may do anything.
type Escalation struct {
	// Authorizer decides escalate and bind; RBAC resolves the writer's rules.
	Authorizer authorizer.Authorizer
	RBAC       *Authorizer
}

// Check refuses a create (old nil) or update of an RBAC object in resource ("roles",
// "clusterroles", "rolebindings", "clusterrolebindings") that would grant more than the writer
// holds. Writes without a user (the server's own) are not checked.
func (e *Escalation) Check(ctx context.Context, resource string, obj, old *unstructured.Unstructured) error {
	u, ok := genericrequest.UserFrom(ctx)
	if !ok || isMaster(u) {
		return nil
	}
	switch resource {
	case "roles", "clusterroles":
		return e.checkRole(ctx, u, resource, obj, old)
	case "rolebindings", "clusterrolebindings":
		return e.checkBinding(ctx, u, resource, obj, old)
	}
	return nil
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

type bindingFields struct {
	RoleRef rbacv1.RoleRef `json:"roleRef"`
}

func (e *Escalation) checkRole(ctx context.Context, u user.Info, resource string, obj, old *unstructured.Unstructured) error {
	var role roleFields
	if err := fromUnstructured(obj, &role); err != nil {
		return err
	}
	if old != nil {
		var before roleFields
		if err := fromUnstructured(old, &before); err == nil && reflect.DeepEqual(before, role) {
			return nil
		}
	}
	if e.allowed(ctx, u, "escalate", resource, obj.GetNamespace(), obj.GetName()) {
		return nil
	}
	gr := rbacv1.Resource(resource)
	if role.AggregationRule != nil {
		return apierrors.NewForbidden(gr, obj.GetName(), errors.New("must have cluster-admin privileges to use the aggregationRule"))
	}
	owned, _ := e.RBAC.Rules(u, obj.GetNamespace())
	if ok, missing := Covers(owned, role.Rules); !ok {
		return apierrors.NewForbidden(gr, obj.GetName(), EscalationError(u, missing))
	}
	return nil
}

func (e *Escalation) checkBinding(ctx context.Context, u user.Info, resource string, obj, old *unstructured.Unstructured) error {
	var b bindingFields
	if err := fromUnstructured(obj, &b); err != nil {
		return err
	}
	if old != nil {
		var before bindingFields
		if err := fromUnstructured(old, &before); err == nil && before.RoleRef == b.RoleRef {
			return nil
		}
	}
	namespace := obj.GetNamespace()
	roleResource := "clusterroles"
	if b.RoleRef.Kind == "Role" {
		roleResource = "roles"
	}
	if e.allowed(ctx, u, "bind", roleResource, namespace, b.RoleRef.Name) {
		return nil
	}
	gr := rbacv1.Resource(resource)
	e.RBAC.mu.RLock()
	rules, err := e.RBAC.roleRules(b.RoleRef, namespace)
	e.RBAC.mu.RUnlock()
	if err != nil {
		return apierrors.NewForbidden(gr, obj.GetName(), err)
	}
	owned, _ := e.RBAC.Rules(u, namespace)
	if ok, missing := Covers(owned, rules); !ok {
		return apierrors.NewForbidden(gr, obj.GetName(), EscalationError(u, missing))
	}
	return nil
}

// allowed asks the authorizer whether u may use verb (escalate, bind) on an RBAC role.
func (e *Escalation) allowed(ctx context.Context, u user.Info, verb, resource, namespace, name string) bool {
	d, _, _ := e.Authorizer.Authorize(ctx, authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: rbacv1.GroupName,
		APIVersion: "v1", Resource: resource, Namespace: namespace, Name: name, ResourceRequest: true})
	return d == authorizer.DecisionAllow
}

func fromUnstructured(u *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}
