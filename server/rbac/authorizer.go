package rbac

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Authorizer is kube's RBAC authorizer over an in-memory copy of the RBAC objects, indexed by
// subject: a decision looks only at the bindings of the user's name and groups, never at every
// binding. It allows a request some rule of a bound role grants and otherwise has no opinion,
// so that the next authorizer of the chain decides. Safe for concurrent use.
type Authorizer struct {
	mu sync.RWMutex
	// Role rules by name ("namespace/name" for Roles).
	clusterRoles map[string][]rbacv1.PolicyRule
	roles        map[string][]rbacv1.PolicyRule
	// Bindings by name ("namespace/name" for RoleBindings), and their names by subject.
	clusterBindings  map[string]*binding
	roleBindings     map[string]*binding
	clusterBySubject map[SubjectKey]map[string]bool
	roleBySubject    map[string]map[SubjectKey]map[string]bool // namespace → subject → names
}

// binding is what a decision needs of a RoleBinding or ClusterRoleBinding.
type binding struct {
	namespace, name string // namespace is "" for a ClusterRoleBinding
	roleRef         rbacv1.RoleRef
	subjects        []rbacv1.Subject
}

// NewAuthorizer returns an Authorizer that knows no RBAC object yet.
func NewAuthorizer() *Authorizer {
	a := &Authorizer{}
	a.resetRoles(true)
	a.resetRoles(false)
	a.resetBindings(true)
	a.resetBindings(false)
	return a
}

func nsName(namespace, name string) string { return namespace + "/" + name }

// SetClusterRole records a ClusterRole's rules (aggregated rules included, as stored).
func (a *Authorizer) SetClusterRole(name string, rules []rbacv1.PolicyRule) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.clusterRoles[name] = rules
}

// SetRole records a Role's rules.
func (a *Authorizer) SetRole(namespace, name string, rules []rbacv1.PolicyRule) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.roles[nsName(namespace, name)] = rules
}

// DeleteRole forgets a Role, or a ClusterRole when namespace is "".
func (a *Authorizer) DeleteRole(namespace, name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if namespace == "" {
		delete(a.clusterRoles, name)
	} else {
		delete(a.roles, nsName(namespace, name))
	}
}

// ResetRoles forgets every ClusterRole (cluster true) or every Role, before a relist.
func (a *Authorizer) ResetRoles(cluster bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.resetRoles(cluster)
}

func (a *Authorizer) resetRoles(cluster bool) {
	if cluster {
		a.clusterRoles = map[string][]rbacv1.PolicyRule{}
	} else {
		a.roles = map[string][]rbacv1.PolicyRule{}
	}
}

// SetBinding records a RoleBinding, or a ClusterRoleBinding when namespace is "", replacing
// any earlier version.
func (a *Authorizer) SetBinding(namespace, name string, roleRef rbacv1.RoleRef, subjects []rbacv1.Subject) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.deleteBinding(namespace, name)
	b := &binding{namespace: namespace, name: name, roleRef: roleRef, subjects: subjects}
	bindings, bySubject := a.bindingsOf(namespace, true)
	bindings[b.key()] = b
	for _, s := range subjects {
		if k, ok := subjectKey(s, namespace); ok {
			if bySubject[k] == nil {
				bySubject[k] = map[string]bool{}
			}
			bySubject[k][b.key()] = true
		}
	}
}

// DeleteBinding forgets a RoleBinding, or a ClusterRoleBinding when namespace is "".
func (a *Authorizer) DeleteBinding(namespace, name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.deleteBinding(namespace, name)
}

// ResetBindings forgets every ClusterRoleBinding (cluster true) or every RoleBinding.
func (a *Authorizer) ResetBindings(cluster bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.resetBindings(cluster)
}

func (a *Authorizer) resetBindings(cluster bool) {
	if cluster {
		a.clusterBindings, a.clusterBySubject = map[string]*binding{}, map[SubjectKey]map[string]bool{}
	} else {
		a.roleBindings, a.roleBySubject = map[string]*binding{}, map[string]map[SubjectKey]map[string]bool{}
	}
}

func (a *Authorizer) deleteBinding(namespace, name string) {
	b := &binding{namespace: namespace, name: name}
	bindings, bySubject := a.bindingsOf(namespace, false)
	old, ok := bindings[b.key()]
	if !ok {
		return
	}
	delete(bindings, b.key())
	for _, s := range old.subjects {
		if k, ok := subjectKey(s, namespace); ok {
			delete(bySubject[k], b.key())
			if len(bySubject[k]) == 0 {
				delete(bySubject, k)
			}
		}
	}
	if namespace != "" && len(bySubject) == 0 {
		delete(a.roleBySubject, namespace)
	}
}

// bindingsOf are the bindings of a namespace ("" for ClusterRoleBindings) and their subject
// index, made if create and missing.
func (a *Authorizer) bindingsOf(namespace string, create bool) (map[string]*binding, map[SubjectKey]map[string]bool) {
	if namespace == "" {
		return a.clusterBindings, a.clusterBySubject
	}
	bySubject := a.roleBySubject[namespace]
	if bySubject == nil && create {
		bySubject = map[SubjectKey]map[string]bool{}
		a.roleBySubject[namespace] = bySubject
	}
	return a.roleBindings, bySubject
}

func (b *binding) key() string {
	if b.namespace == "" {
		return b.name
	}
	return nsName(b.namespace, b.name)
}

// visitor is called with each binding that applies to a user, the subject that made it apply,
// and the rules of its role (found is false when the role does not exist); it returns false to
// stop the visit.
type visitor func(b *binding, subject rbacv1.Subject, rules []rbacv1.PolicyRule, found bool) bool

// visitRules calls visit for each binding of u: its ClusterRoleBindings, then its RoleBindings
// in namespace (if not ""). The caller holds a.mu.
func (a *Authorizer) visitRules(u user.Info, namespace string, visit visitor) {
	for _, k := range userKeys(u) {
		for key := range a.clusterBySubject[k] {
			if !a.visitBinding(a.clusterBindings[key], k, visit) {
				return
			}
		}
	}
	if namespace == "" {
		return
	}
	for _, k := range userKeys(u) {
		for key := range a.roleBySubject[namespace][k] {
			if !a.visitBinding(a.roleBindings[key], k, visit) {
				return
			}
		}
	}
}

func (a *Authorizer) visitBinding(b *binding, k SubjectKey, visit visitor) bool {
	rules, found := a.roleRules(b.roleRef, b.namespace)
	for _, s := range b.subjects {
		if sk, ok := subjectKey(s, b.namespace); ok && sk == k {
			return visit(b, s, rules, found)
		}
	}
	return true
}

// roleRules are the rules of the role a binding in namespace refers to, and whether it exists.
func (a *Authorizer) roleRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, bool) {
	if ref.Kind == "Role" {
		rules, ok := a.roles[nsName(namespace, ref.Name)]
		return rules, ok
	}
	rules, ok := a.clusterRoles[ref.Name]
	return rules, ok
}

// roleNotFound is the error of a role that does not exist. kube words it as the reader it
// looked the role up with does: its authorizer's listers say "role" or "clusterrole"
// (registry false), its escalation check's registry "roles" or "clusterroles" (registry true).
func roleNotFound(ref rbacv1.RoleRef, registry bool) error {
	resource := "clusterrole"
	if ref.Kind == "Role" {
		resource = "role"
	}
	if registry {
		resource += "s"
	}
	return apierrors.NewNotFound(rbacv1.Resource(resource), ref.Name)
}

// Authorize allows a request that a rule of one of the user's bound roles grants. Otherwise it
// has no opinion; the reason then lists bound roles that do not exist, as kube's does.
func (a *Authorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var allowedBy string
	var errs []error
	a.visitRules(attrs.GetUser(), attrs.GetNamespace(), func(b *binding, s rbacv1.Subject, rules []rbacv1.PolicyRule, found bool) bool {
		if !found {
			errs = append(errs, roleNotFound(b.roleRef, false))
			return true
		}
		for i := range rules {
			if RuleAllows(attrs, &rules[i]) {
				allowedBy = describe(b, s)
				return false
			}
		}
		return true
	})
	if allowedBy != "" {
		return authorizer.DecisionAllow, "RBAC: allowed by " + allowedBy, nil
	}
	if len(errs) > 0 {
		return authorizer.DecisionNoOpinion, "RBAC: " + utilerrors.NewAggregate(errs).Error(), nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// describe names the binding and subject that allowed a request, as kube's reasons do.
func describe(b *binding, s rbacv1.Subject) string {
	kind, name := "ClusterRoleBinding", b.name
	if b.namespace != "" {
		kind, name = "RoleBinding", b.name+"/"+b.namespace
	}
	subject := fmt.Sprintf("%s %q", s.Kind, s.Name)
	if s.Kind == rbacv1.ServiceAccountKind {
		ns := s.Namespace
		if ns == "" {
			ns = b.namespace
		}
		subject = fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+ns)
	}
	return fmt.Sprintf("%s %q of %s %q to %s", kind, name, b.roleRef.Kind, b.roleRef.Name, subject)
}

// ConditionsAwareAuthorize: RBAC has no conditions; it is Authorize's decision.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

// EvaluateConditions is never called: RBAC returns no conditions.
func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// Rules are the rules u holds cluster-wide and, if namespace is not "", in namespace. missing
// are the errors of the bound roles that do not exist, worded for registry as roleNotFound
// says, in the order kube's rule resolver meets them: ClusterRoleBindings, then RoleBindings,
// each by binding name.
func (a *Authorizer) Rules(u user.Info, namespace string, registry bool) (rules []rbacv1.PolicyRule, missing []error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var unbound []*binding
	a.visitRules(u, namespace, func(b *binding, _ rbacv1.Subject, r []rbacv1.PolicyRule, found bool) bool {
		if !found && !slices.Contains(unbound, b) {
			unbound = append(unbound, b)
		}
		rules = append(rules, r...)
		return true
	})
	slices.SortFunc(unbound, func(x, y *binding) int {
		return cmp.Or(cmp.Compare(x.namespace, y.namespace), cmp.Compare(x.name, y.name)) // "" first
	})
	for _, b := range unbound {
		missing = append(missing, roleNotFound(b.roleRef, registry))
	}
	return rules, missing
}

// RulesFor lists u's rules in namespace for SelfSubjectRulesReview; incomplete when a bound
// role does not exist.
func (a *Authorizer) RulesFor(_ context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	rules, errs := a.Rules(u, namespace, false)
	var resourceRules []authorizer.ResourceRuleInfo
	var nonResourceRules []authorizer.NonResourceRuleInfo
	for _, r := range rules {
		if len(r.Resources) > 0 {
			resourceRules = append(resourceRules, &authorizer.DefaultResourceRuleInfo{
				Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
		}
		if len(r.NonResourceURLs) > 0 {
			nonResourceRules = append(nonResourceRules, &authorizer.DefaultNonResourceRuleInfo{
				Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
		}
	}
	return resourceRules, nonResourceRules, len(errs) > 0, utilerrors.NewAggregate(errs)
}
