package kuberef

import (
	"fmt"
	"sort"
)

// identityScenarios are issue 34's reviews and namespace deletion: SelfSubjectRulesReviews of
// users holding different rules, TokenReviews of a ServiceAccount token each server minted (and
// of a token no one minted), and the deletion of a namespace a finalizer holds: its answers up to
// the refusal of new content, not what follows (sqlkube's namespace controller empties it, kube's
// is in kube-controller-manager, which the reference does not run).
func identityScenarios() []scenario {
	const (
		ssrr   = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
		tokens = "/apis/authentication.k8s.io/v1/tokenreviews"
		doomed = "/api/v1/namespaces/doomed"
	)
	rulesReview := func(ns string) string {
		return `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{"namespace":"` + ns + `"}}`
	}
	tokenReview := func(token string) string {
		return `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"` + token + `"}}`
	}
	return []scenario{
		{"rules reviews", []step{
			{method: "POST", path: ssrr, body: rulesReview(rbacNS), as: "holder", pick: sortedRules},
			{method: "POST", path: ssrr, body: rulesReview(rbacNS), as: "writer", pick: sortedRules},
			{method: "POST", path: ssrr, body: rulesReview(rbacNS), pick: sortedRules},
			{method: "POST", path: ssrr, body: `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{}}`, as: "holder"},
		}},
		{"token reviews", []step{
			builderAccount("default"),
			{method: "POST", path: core + "/serviceaccounts/builder/token", body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`},
			{method: "POST", path: tokens, body: tokenReview("{{value:token}}")},
			{method: "POST", path: tokens, body: tokenReview("not-a-token")},
			{method: "POST", path: tokens, body: tokenReview("")},
			{method: "POST", path: tokens, body: tokenReview("{{value:token}}"), as: "writer"},
		}},
		{"pod-bound token reviews", []step{
			{method: "POST", path: core + "/pods", body: pod("token-bound", `{}`, "")},
			{method: "POST", path: core + "/serviceaccounts/builder/token", body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"token-bound"}}}`},
			{method: "POST", path: tokens, body: tokenReview("{{value:token}}")},
			{method: "POST", path: core + "/serviceaccounts/builder/token", body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"boundObjectRef":{"kind":"ConfigMap","apiVersion":"v1","name":"x"}}}`},
			{method: "DELETE", path: core + "/pods/token-bound", body: `{"gracePeriodSeconds":0}`},
			{method: "POST", path: tokens, body: tokenReview("{{value:token}}")},
		}},
		{"namespace deletion with finalizers", []step{
			{method: "POST", path: "/api/v1/namespaces", body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"doomed","finalizers":["example.com/hold"]}}`},
			{method: "POST", path: doomed + "/configmaps", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"content"}}`},
			{method: "DELETE", path: doomed, body: `{"preconditions":{"uid":"6b0e7c1e-0000-4000-8000-000000000000"}}`},
			{method: "DELETE", path: doomed},
			{method: "POST", path: doomed + "/configmaps", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late"}}`},
		}},
	}
}

// sortedRules sorts a rules review's resource and non-resource rules: kube gathers them from
// the bindings in its informers' order, which is no fixed order.
func sortedRules(v any) any {
	review, _ := v.(map[string]any)
	status, _ := review["status"].(map[string]any)
	for _, key := range []string{"resourceRules", "nonResourceRules"} {
		if rules, ok := status[key].([]any); ok {
			sort.Slice(rules, func(i, j int) bool { return fmt.Sprint(rules[i]) < fmt.Sprint(rules[j]) })
		}
	}
	return review
}
