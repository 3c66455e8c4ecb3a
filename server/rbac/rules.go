// Package rbac evaluates Kubernetes RBAC as kube-apiserver's RBAC authorizer documents it
// (https://kubernetes.io/docs/reference/access-authn-authz/rbac/): which rules a user holds
// through Roles, ClusterRoles and their bindings, whether a request is allowed, whether a user
// may grant a role (escalation prevention), and the bootstrap policy. It holds no storage and
// no HTTP: its Authorizer is fed the RBAC objects by whoever follows them.
package rbac

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// RuleAllows reports whether rule grants the request described by attrs.
func RuleAllows(attrs authorizer.Attributes, rule *rbacv1.PolicyRule) bool {
	if !attrs.IsResourceRequest() {
		return VerbMatches(rule, attrs.GetVerb()) && NonResourceURLMatches(rule, attrs.GetPath())
	}
	return VerbMatches(rule, attrs.GetVerb()) &&
		APIGroupMatches(rule, attrs.GetAPIGroup()) &&
		ResourceMatches(rule, attrs.GetResource(), attrs.GetSubresource()) &&
		ResourceNameMatches(rule, attrs.GetName())
}

// VerbMatches: "*" or the verb itself.
func VerbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	return hasOrAll(rule.Verbs, verb, rbacv1.VerbAll)
}

// APIGroupMatches: "*" or the group itself ("" is the core group).
func APIGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	return hasOrAll(rule.APIGroups, group, rbacv1.APIGroupAll)
}

// ResourceMatches: "*" matches every resource and subresource; "res" only the resource itself;
// "res/sub" that subresource; "*/sub" the subresource of any resource.
func ResourceMatches(rule *rbacv1.PolicyRule, resource, subresource string) bool {
	requested := resource
	if subresource != "" {
		requested = resource + "/" + subresource
	}
	for _, r := range rule.Resources {
		if r == rbacv1.ResourceAll || r == requested {
			return true
		}
		if subresource != "" && r == "*/"+subresource {
			return true
		}
	}
	return false
}

// ResourceNameMatches: a rule without resourceNames covers every name; one with names covers
// only requests for one of them, so never a request without a name (list, create).
func ResourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	if len(rule.ResourceNames) == 0 {
		return true
	}
	return name != "" && slices.Contains(rule.ResourceNames, name)
}

// NonResourceURLMatches: "*", the path itself, or a prefix ending in "*".
func NonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")) {
			return true
		}
	}
	return false
}

func hasOrAll(values []string, v, all string) bool {
	for _, x := range values {
		if x == all || x == v {
			return true
		}
	}
	return false
}

// SubjectKey is how the index finds a subject's bindings: a user name (ServiceAccounts as their
// user names) or a group.
type SubjectKey struct {
	Group bool
	Name  string
}

// subjectKey is the key a binding's subject is found by; bindingNamespace is where a
// ServiceAccount subject without a namespace lives. ok is false for subjects no user can be.
func subjectKey(s rbacv1.Subject, bindingNamespace string) (SubjectKey, bool) {
	switch s.Kind {
	case rbacv1.UserKind:
		return SubjectKey{Name: s.Name}, true
	case rbacv1.GroupKind:
		return SubjectKey{Group: true, Name: s.Name}, true
	case rbacv1.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		if ns == "" {
			return SubjectKey{}, false
		}
		return SubjectKey{Name: serviceaccount.MakeUsername(ns, s.Name)}, true
	}
	return SubjectKey{}, false
}

// userKeys are the keys a user's bindings are indexed under: its name and each group.
func userKeys(u user.Info) []SubjectKey {
	keys := make([]SubjectKey, 0, 1+len(u.GetGroups()))
	keys = append(keys, SubjectKey{Name: u.GetName()})
	for _, g := range u.GetGroups() {
		keys = append(keys, SubjectKey{Group: true, Name: g})
	}
	return keys
}
