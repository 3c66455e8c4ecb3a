package kuberef

// watchNS is where the watches as identities look; otherNS is a namespace watcher may not read.
const (
	watchNS  = "watch-a"
	otherNS  = "watch-b"
	watchSel = "?watch=1&labelSelector=kuberef-watch%3Dyes"
)

// watchIdentityScenarios watch ConfigMaps as identities (issue 34): nobody, who may not list or
// watch them (its 403s, as each path words them), watcher, who may in one namespace (403s
// elsewhere, and the events of that namespace only), and holder, who may everywhere; then the
// same writes are seen by each watch that may see them, compared event by event.
func watchIdentityScenarios() []scenario {
	cms := func(ns string) string { return "/api/v1/namespaces/" + ns + "/configmaps" }
	cm := func(name string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","labels":{"kuberef-watch":"yes"}},"data":{"a":"1"}}`
	}
	namespace := func(name string) step {
		return step{method: "POST", path: "/api/v1/namespaces", setup: true,
			body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + name + `"}}`}
	}
	return []scenario{{"watches as identities", []step{
		namespace(watchNS),
		namespace(otherNS),
		{method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/namespaces/" + watchNS + "/roles", setup: true,
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"watcher"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["list","watch"]}]}`},
		{method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/namespaces/" + watchNS + "/rolebindings", setup: true,
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"watcher"},
"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"watcher"},"subjects":[` + user("watcher") + `]}`},
		// The RoleBinding reaches each server's authorizer through its informers: a list is
		// repeated until it is allowed.
		{method: "GET", path: cms(watchNS) + "?labelSelector=kuberef-watch%3Dyes", as: "watcher", waitFor: 200},
		{watch: "nobody", method: "GET", path: cms(watchNS) + watchSel, as: "nobody"},
		{watch: "nobody-all", method: "GET", path: "/api/v1/configmaps" + watchSel, as: "nobody"},
		{watch: "nobody-legacy", method: "GET", path: "/api/v1/watch/namespaces/" + watchNS + "/configmaps?labelSelector=kuberef-watch%3Dyes", as: "nobody"},
		{watch: "other", method: "GET", path: cms(otherNS) + watchSel, as: "watcher"},
		{watch: "all", method: "GET", path: "/api/v1/configmaps" + watchSel, as: "watcher"},
		{watch: "one", method: "GET", path: cms(watchNS) + watchSel + "&fieldSelector=metadata.name%3Dw1", as: "watcher"},
		{watch: "mine", method: "GET", path: cms(watchNS) + watchSel, as: "watcher"},
		{watch: "legacy", method: "GET", path: "/api/v1/watch/namespaces/" + watchNS + "/configmaps?labelSelector=kuberef-watch%3Dyes", as: "watcher"},
		{watch: "everything", method: "GET", path: "/api/v1/configmaps" + watchSel, as: "holder"},
		{method: "POST", path: cms(watchNS), body: cm("w1")},
		{method: "POST", path: cms(otherNS), body: cm("w2")},
		{method: "POST", path: cms(watchNS), body: cm("w3")},
		{method: "PATCH", path: cms(watchNS) + "/w1", body: `{"data":{"a":"2"}}`, contentType: "application/merge-patch+json"},
		{method: "DELETE", path: cms(watchNS) + "/w1"},
		{method: "DELETE", path: cms(otherNS) + "/w2"},
		{watch: "mine", events: 4},
		{watch: "legacy", events: 4},
		{watch: "one", events: 3},
		{watch: "everything", events: 6},
		// A read as watcher where it may not read, after the writes: its 403 body.
		{method: "GET", path: cms(otherNS) + "/w2", as: "watcher"},
	}}}
}
