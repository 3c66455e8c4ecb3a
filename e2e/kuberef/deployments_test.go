package kuberef

// deploymentScenarios compare apps/v1 deployments, which sqlkube serves with kube's own
// strategy, defaults and printer (issue 32): kube's defaults on create and on a server-side
// apply, its validation causes, its update rules (the selector is immutable, the generation
// counts spec and annotation changes), /status, /scale and the table columns.
func deploymentScenarios() []scenario {
	const (
		deployments = "/apis/apps/v1/namespaces/default/deployments"
		table       = "application/json;as=Table;v=v1;g=meta.k8s.io"
	)
	deployment := func(name, selector, labels, containers string) string {
		return `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"` + name + `"},
		  "spec":{"selector":{"matchLabels":` + selector + `},"template":{"metadata":{"labels":` + labels + `},
		  "spec":{"containers":` + containers + `}}}}`
	}
	nginx := `[{"name":"nginx","image":"nginx:1.27"}]`
	return []scenario{
		{"deployments with kube's rules", []step{
			{method: "POST", path: deployments, body: deployment("web", `{"app":"web"}`, `{"app":"web"}`, nginx)},
			{method: "POST", path: deployments, body: deployment("bad", `{"app":"web"}`, `{"app":"other"}`, `[]`)},
			{method: "PUT", path: deployments + "/web", body: deployment("web", `{"app":"web","x":"y"}`, `{"app":"web","x":"y"}`, nginx)},
			{method: "PATCH", path: deployments + "/web", body: `{"metadata":{"annotations":{"a":"b"}}}`, contentType: "application/merge-patch+json"},
			{method: "PATCH", path: deployments + "/web/status", body: `{"status":{"replicas":2}}`, contentType: "application/merge-patch+json"},
			{method: "GET", path: deployments + "/web/scale"},
			{method: "PATCH", path: deployments + "/web/scale", body: `{"spec":{"replicas":3}}`, contentType: "application/merge-patch+json"},
			{method: "PATCH", path: deployments + "/web/scale", body: `{"spec":{"replicas":-1}}`, contentType: "application/merge-patch+json"},
			{method: "PATCH", path: deployments + "/applied?fieldManager=m", body: deployment("applied", `{"app":"a"}`, `{"app":"a"}`, nginx),
				contentType: "application/apply-patch+yaml"},
			{method: "GET", path: deployments, accept: table},
			{method: "DELETE", path: deployments + "/web"},
			{method: "DELETE", path: deployments + "/applied"},
		}},
	}
}
