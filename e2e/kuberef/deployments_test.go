package kuberef

// deploymentScenarios compare the apps/v1 types, which sqlkube serves with kube's own
// strategies, defaults and printers (issue 32): kube's defaults on create and on a server-side
// apply, its validation causes, its update rules (the selector is immutable, the generation
// counts spec and annotation changes), /status, /scale, field selectors and the table columns.
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
	const apps = "/apis/apps/v1/namespaces/default"
	workload := func(kind, name, containers string) string {
		return `{"apiVersion":"apps/v1","kind":"` + kind + `","metadata":{"name":"` + name + `"},
		  "spec":{"selector":{"matchLabels":{"app":"` + name + `"}},"template":{"metadata":{"labels":{"app":"` + name + `"}},
		  "spec":{"containers":` + containers + `}}}}`
	}
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
		{"replicasets, statefulsets and daemonsets with kube's rules", []step{
			{method: "POST", path: apps + "/replicasets", body: workload("ReplicaSet", "rs", nginx)},
			{method: "POST", path: apps + "/statefulsets", body: workload("StatefulSet", "sts", nginx)},
			{method: "POST", path: apps + "/daemonsets", body: workload("DaemonSet", "ds", nginx)},
			{method: "POST", path: apps + "/daemonsets", body: workload("DaemonSet", "bad", `[{"name":"c"}]`)},
			{method: "PATCH", path: apps + "/replicasets/rs/scale", body: `{"spec":{"replicas":2}}`, contentType: "application/merge-patch+json"},
			{method: "PATCH", path: apps + "/statefulsets/sts/scale", body: `{"spec":{"replicas":2}}`, contentType: "application/merge-patch+json"},
			{method: "GET", path: apps + "/replicasets?fieldSelector=status.replicas%3D0"},
			{method: "GET", path: apps + "/replicasets", accept: table},
			{method: "GET", path: apps + "/statefulsets", accept: table},
			{method: "GET", path: apps + "/daemonsets", accept: table},
			{method: "DELETE", path: apps + "/replicasets/rs"},
			{method: "DELETE", path: apps + "/statefulsets/sts"},
			{method: "DELETE", path: apps + "/daemonsets/ds"},
		}},
	}
}
