package kuberef

// bootstrapPolicyScenario reads the whole bootstrap policy of each fresh server (issue 46):
// every ClusterRole, ClusterRoleBinding, Role and RoleBinding it wrote at start, kube's
// bootstrappolicy package on both, before any other scenario writes RBAC objects.
func bootstrapPolicyScenario() scenario {
	read := func(resource string) step {
		return step{method: "GET", path: rbacAPI + "/" + resource, pick: withoutAggregatedRules}
	}
	return scenario{"bootstrap policy", []step{
		read("clusterroles"), read("clusterrolebindings"), read("roles"), read("rolebindings"),
	}}
}

// withoutAggregatedRules leaves out of a list of ClusterRoles the rules of those that aggregate
// others (admin, edit, view), and who wrote them: kube-controller-manager's aggregation
// controller gathers them, and the reference runs no kube-controller-manager (sqlkube's
// aggregation has its own tests). What kube-apiserver wrote of them is compared.
func withoutAggregatedRules(v any) any {
	list, _ := v.(map[string]any)
	items, _ := list["items"].([]any)
	for _, item := range items {
		role, _ := item.(map[string]any)
		if role["aggregationRule"] == nil {
			continue
		}
		delete(role, "rules")
		meta, _ := role["metadata"].(map[string]any)
		managed, _ := meta["managedFields"].([]any)
		var byAPIServer []any
		for _, entry := range managed {
			if e, _ := entry.(map[string]any); e["manager"] == "kube-apiserver" {
				byAPIServer = append(byAPIServer, entry)
			}
		}
		meta["managedFields"] = byAPIServer
	}
	return v
}

// editRulesScenario: a user holding, in one namespace, the rules kube's edit role aggregates
// (bound to system:aggregate-to-edit and system:aggregate-to-view, which edit gathers on a
// cluster) runs workloads there: pods, deployments, services. Bound to edit itself, the user
// would be refused by the reference alone, whose edit role nothing aggregates.
func editRulesScenario() scenario {
	ns := "/api/v1/namespaces/" + rbacNS
	binding := func(role string) step {
		return step{method: "POST", path: rbacAPI + "/namespaces/" + rbacNS + "/rolebindings",
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"` + role + `"},
"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"system:aggregate-to-` + role + `"},"subjects":[` + user("editor") + `]}`}
	}
	return scenario{"workloads by edit's rules", []step{
		builderAccount(rbacNS),
		binding("edit"),
		binding("view"),
		// The bindings reach each server's authorizer through its informers.
		{method: "GET", path: ns + "/pods", as: "editor", waitFor: 200},
		{method: "POST", path: ns + "/pods", as: "editor", body: pod("edited", `{"app":"edited"}`, "")},
		{method: "POST", path: "/apis/apps/v1/namespaces/" + rbacNS + "/deployments", as: "editor",
			body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"edited"},
"spec":{"selector":{"matchLabels":{"app":"edited"}},"template":{"metadata":{"labels":{"app":"edited"}},
"spec":{"serviceAccountName":"builder","containers":[{"name":"c","image":"nginx:1.27"}]}}}}`},
		{method: "POST", path: ns + "/services", as: "editor",
			body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"edited"},"spec":{"selector":{"app":"edited"},"ports":[{"port":80}]}}`},
		{method: "GET", path: "/apis/batch/v1/namespaces/" + rbacNS + "/jobs", as: "editor"},
		{method: "DELETE", path: ns + "/pods/edited", as: "editor", body: `{"gracePeriodSeconds":0}`},
		{method: "DELETE", path: "/apis/apps/v1/namespaces/" + rbacNS + "/deployments/edited", as: "editor"},
		// Roles and bindings are admin's, not edit's.
		{method: "GET", path: rbacAPI + "/namespaces/" + rbacNS + "/rolebindings", as: "editor"},
		{method: "GET", path: "/api/v1/namespaces/default/pods", as: "editor"},
	}}
}
