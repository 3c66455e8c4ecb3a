package rbac

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/component-helpers/auth/rbac/validation"
)

func resourceAttrs(verb, group, resource, subresource, namespace, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "alice"}, Verb: verb, APIGroup: group, Resource: resource,
		Subresource: subresource, Namespace: namespace, Name: name, ResourceRequest: true}
}

func pathAttrs(verb, path string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "alice"}, Verb: verb, Path: path}
}

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

// TestRuleAllows follows the rules of the RBAC documentation: wildcards, subresources, resource
// names and non-resource URLs.
func TestRuleAllows(t *testing.T) {
	cm := func(verbs ...string) rbacv1.PolicyRule { return rule(verbs, "", "configmaps") }
	tests := []struct {
		name  string
		rule  rbacv1.PolicyRule
		attrs authorizer.AttributesRecord
		want  bool
	}{
		{"exact verb, group, resource", cm("get"), resourceAttrs("get", "", "configmaps", "", "ns", "x"), true},
		{"other verb", cm("get"), resourceAttrs("list", "", "configmaps", "", "ns", ""), false},
		{"verb wildcard", cm("*"), resourceAttrs("deletecollection", "", "configmaps", "", "ns", ""), true},
		{"other group", cm("get"), resourceAttrs("get", "apps", "configmaps", "", "ns", "x"), false},
		{"group wildcard", rule([]string{"get"}, "*", "configmaps"), resourceAttrs("get", "apps", "configmaps", "", "ns", "x"), true},
		{"resource wildcard covers subresources", rule([]string{"get"}, "", "*"), resourceAttrs("get", "", "namespaces", "status", "", "x"), true},
		{"resource does not cover its subresource", rule([]string{"get"}, "", "namespaces"), resourceAttrs("get", "", "namespaces", "status", "", "x"), false},
		{"subresource named", rule([]string{"get"}, "", "namespaces/status"), resourceAttrs("get", "", "namespaces", "status", "", "x"), true},
		{"subresource does not cover its resource", rule([]string{"get"}, "", "namespaces/status"), resourceAttrs("get", "", "namespaces", "", "", "x"), false},
		{"*/subresource", rule([]string{"update"}, "", "*/scale"), resourceAttrs("update", "", "widgets", "scale", "ns", "x"), true},
		{"*/subresource not the resource", rule([]string{"update"}, "", "*/scale"), resourceAttrs("update", "", "widgets", "", "ns", "x"), false},
		{"resource/* is not a wildcard", rule([]string{"get"}, "", "namespaces/*"), resourceAttrs("get", "", "namespaces", "status", "", "x"), false},
		{"resource name matches", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"x"}},
			resourceAttrs("get", "", "configmaps", "", "ns", "x"), true},
		{"other resource name", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"x"}},
			resourceAttrs("get", "", "configmaps", "", "ns", "y"), false},
		{"resource names never cover a list", rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"x"}},
			resourceAttrs("list", "", "configmaps", "", "ns", ""), false},
		{"non-resource exact", urlRule([]string{"get"}, "/healthz"), pathAttrs("get", "/healthz"), true},
		{"non-resource other path", urlRule([]string{"get"}, "/healthz"), pathAttrs("get", "/healthz/etcd"), false},
		{"non-resource prefix", urlRule([]string{"get"}, "/healthz/*"), pathAttrs("get", "/healthz/etcd"), true},
		{"non-resource prefix is not the parent", urlRule([]string{"get"}, "/healthz/*"), pathAttrs("get", "/healthz"), false},
		{"non-resource wildcard", urlRule([]string{"*"}, "*"), pathAttrs("post", "/anything"), true},
		{"non-resource verb", urlRule([]string{"get"}, "/metrics"), pathAttrs("post", "/metrics"), false},
		{"resource rule never allows a path", rule([]string{"*"}, "*", "*"), pathAttrs("get", "/healthz"), false},
		{"path rule never allows a resource", urlRule([]string{"*"}, "*"), resourceAttrs("get", "", "configmaps", "", "ns", "x"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := RuleAllows(tc.attrs, &tc.rule); got != tc.want {
				t.Errorf("RuleAllows(%+v) = %v, want %v", tc.rule, got, tc.want)
			}
		})
	}
}

// FuzzRuleAllows checks that a rule of wildcards allows every request and that a rule never
// allows what its verbs leave out, whatever the request.
// FuzzRuleAllows compares RuleAllows, which decides requests, with kube's own rule comparison
// (component-helpers' Covers, which kube's escalation check uses): a rule allows a request
// exactly when it covers the one-verb, one-resource (or one-URL) rule the request asks for.
// Resource names cannot hold "/" in a request, so the fuzzer's are cut at it.
func FuzzRuleAllows(f *testing.F) {
	f.Add("get", "", "configmaps", "", "x", "/healthz", true, "get,list", "", "configmaps", "", "")
	f.Add("update", "apps", "deployments", "scale", "", "/", false, "*", "*", "*", "", "*")
	f.Add("get", "", "pods", "log", "p", "/logs/x", true, "get", "", "*/log", "p", "/logs/*")
	f.Add("get", "", "", "", "", "/a", false, "get", "", "", "", "/a**")
	f.Add("list", "", "secrets", "", "", "/", true, "list", "", "secrets", "a", "")
	f.Fuzz(func(t *testing.T, verb, group, resource, subresource, name, path string, isResource bool,
		ruleVerbs, ruleGroups, ruleResources, ruleNames, ruleURLs string) {
		resource, _, _ = strings.Cut(resource, "/")
		subresource, _, _ = strings.Cut(subresource, "/")
		rule := rbacv1.PolicyRule{Verbs: list(ruleVerbs), APIGroups: list(ruleGroups), Resources: list(ruleResources),
			ResourceNames: list(ruleNames), NonResourceURLs: list(ruleURLs)}
		attrs := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "u"}, Verb: verb, APIGroup: group,
			Resource: resource, Subresource: subresource, Name: name, Path: path, ResourceRequest: isResource}
		asked := rbacv1.PolicyRule{Verbs: []string{verb}, NonResourceURLs: []string{path}}
		if isResource {
			asked = rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{resource}}
			if subresource != "" {
				asked.Resources = []string{resource + "/" + subresource}
			}
			if name != "" {
				asked.ResourceNames = []string{name}
			}
		}
		rule = onlyKindOf(rule, isResource)
		want, _ := validation.Covers([]rbacv1.PolicyRule{rule}, []rbacv1.PolicyRule{asked})
		if got := RuleAllows(attrs, &rule); got != want {
			t.Fatalf("RuleAllows(%+v, %+v) = %v, kube's Covers says %v", attrs, rule, got, want)
		}
	})
}

// list splits a fuzzed comma-separated list; "" is no values.
func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// onlyKindOf keeps a rule's resource or URL half, as validation would (a rule has one or the
// other): a URL rule with resources would cover nothing in Covers' eyes, yet never matter to
// RuleAllows, which reads only the half a request needs.
func onlyKindOf(rule rbacv1.PolicyRule, resource bool) rbacv1.PolicyRule {
	if resource {
		rule.NonResourceURLs = nil
	} else {
		rule.APIGroups, rule.Resources, rule.ResourceNames = nil, nil, nil
	}
	return rule
}
