package kuberef

import (
	"fmt"
	"strings"
)

// admissionNS is where the admission scenarios write; their webhooks and policies select
// objects by label, so that they change nothing else.
const (
	admissionNS   = "admission-test"
	admissionCMs  = "/api/v1/namespaces/" + admissionNS + "/configmaps"
	admissionAPI  = "/apis/admissionregistration.k8s.io/v1"
	unreachable   = "https://127.0.0.1:1/"
	hookLabel     = "kuberef-webhook"
	policyLabel   = "kuberef-policy"
	validatingCfg = "kuberef-validating"
	mutatingCfg   = "kuberef-mutating"
)

// admissionConfigMap is a ConfigMap labelled key=value, with data (a JSON object or "").
func admissionConfigMap(name, key, value, data string) string {
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","labels":{"` + key + `":"` + value + `"}}`
	if data != "" {
		body += `,"data":` + data
	}
	return body + "}"
}

// hookEntry is one webhook of a configuration: called at url for the writes of ConfigMaps
// labelled kuberef-webhook=label.
func hookEntry(label, url, caBundle, failurePolicy string, timeout int) string {
	return fmt.Sprintf(`{"name":"%s.kuberef.example.com","clientConfig":{"url":%q,"caBundle":%q},
"rules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["configmaps"]}],
"objectSelector":{"matchLabels":{%q:%q}},"failurePolicy":%q,"sideEffects":"None","admissionReviewVersions":["v1"],"timeoutSeconds":%d}`,
		label, url, caBundle, hookLabel, label, failurePolicy, timeout)
}

// webhookScenarios configure webhooks served by hook (and two that no one serves) and write
// ConfigMaps each of them selects: allowed, denied with and without a code, warned, annotated
// for the audit log, mutated by a JSON patch; failure policies Fail and Ignore with an
// unreachable webhook and with one that answers after its timeout.
func webhookScenarios(hook *admissionWebhook) []scenario {
	on := func(path string) string { return hook.url + path }
	validating := []string{
		hookEntry("allow", on("/allow"), hook.caBundle, "Fail", 10),
		hookEntry("deny", on("/deny"), hook.caBundle, "Fail", 10),
		hookEntry("deny-bare", on("/deny-bare"), hook.caBundle, "Fail", 10),
		hookEntry("warn", on("/warn"), hook.caBundle, "Fail", 10),
		hookEntry("annotate", on("/annotate"), hook.caBundle, "Fail", 10),
		hookEntry("down-fail", unreachable, hook.caBundle, "Fail", 10),
		hookEntry("down-ignore", unreachable, hook.caBundle, "Ignore", 10),
		hookEntry("slow-fail", on("/hang"), hook.caBundle, "Fail", 1),
		hookEntry("slow-ignore", on("/hang"), hook.caBundle, "Ignore", 1),
	}
	mutating := []string{
		hookEntry("mutate", on("/mutate"), hook.caBundle, "Fail", 10),
		hookEntry("mutate-deny", on("/deny"), hook.caBundle, "Fail", 10),
	}
	cm := func(name, label string) string { return admissionConfigMap(name, hookLabel, label, `{"a":"1"}`) }
	return []scenario{{"admission webhooks", []step{
		{method: "POST", path: "/api/v1/namespaces", setup: true,
			body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + admissionNS + `"}}`},
		{method: "POST", path: admissionAPI + "/validatingwebhookconfigurations",
			body: `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"` + validatingCfg + `"},"webhooks":[` + strings.Join(validating, ",") + `]}`},
		{method: "POST", path: admissionAPI + "/mutatingwebhookconfigurations",
			body: `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration","metadata":{"name":"` + mutatingCfg + `"},"webhooks":[` + strings.Join(mutating, ",") + `]}`},
		// Each server starts calling the webhooks once its informers have the configurations:
		// a dry-run write the deny webhooks refuse is repeated until they do.
		{method: "POST", path: admissionCMs + "?dryRun=All", body: cm("probe", "deny"), waitFor: 403},
		{method: "POST", path: admissionCMs + "?dryRun=All", body: cm("probe", "mutate-deny"), waitFor: 403},
		{method: "POST", path: admissionCMs, body: cm("allowed", "allow")},
		{method: "POST", path: admissionCMs, body: cm("denied", "deny")},
		{method: "POST", path: admissionCMs, body: cm("denied-bare", "deny-bare")},
		{method: "POST", path: admissionCMs, body: cm("warned", "warn")},
		{method: "PUT", path: admissionCMs + "/warned", body: admissionConfigMap("warned", hookLabel, "warn", `{"a":"2"}`)},
		{method: "POST", path: admissionCMs, body: cm("annotated", "annotate")},
		{method: "POST", path: admissionCMs, body: cm("mutated", "mutate")},
		{method: "GET", path: admissionCMs + "/mutated"},
		{method: "POST", path: admissionCMs, body: cm("down-fail", "down-fail")},
		{method: "POST", path: admissionCMs, body: cm("down-ignore", "down-ignore")},
		{method: "POST", path: admissionCMs, body: cm("slow-fail", "slow-fail")},
		{method: "POST", path: admissionCMs, body: cm("slow-ignore", "slow-ignore")},
		{method: "GET", path: admissionCMs + "/denied"},
		{method: "DELETE", path: admissionAPI + "/validatingwebhookconfigurations/" + validatingCfg},
		{method: "DELETE", path: admissionAPI + "/mutatingwebhookconfigurations/" + mutatingCfg},
	}}}
}

// policyRules match the creates and updates of ConfigMaps.
const policyRules = `"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["configmaps"]}]}`

// resourceOf is the resource of an admission policy kind or binding kind.
func resourceOf(kind string) string {
	resource := strings.ToLower(kind)
	if strings.HasSuffix(resource, "y") {
		return strings.TrimSuffix(resource, "y") + "ies"
	}
	return resource + "s"
}

// policy is a ValidatingAdmissionPolicy (kind ValidatingAdmissionPolicy) or
// MutatingAdmissionPolicy named name with spec's fields besides its match constraints.
func policy(kind, name, spec string) step {
	return step{method: "POST", path: admissionAPI + "/" + resourceOf(kind),
		body: `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"` + kind + `","metadata":{"name":"` + name + `"},"spec":{` + policyRules + `,` + spec + `}}`}
}

// policyBinding binds the policy named policyName to the ConfigMaps labelled
// kuberef-policy=name, with spec's other fields.
func policyBinding(kind, name, policyName, spec string) step {
	if spec != "" {
		spec = "," + spec
	}
	return step{method: "POST", path: admissionAPI + "/" + resourceOf(kind),
		body: `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"` + kind + `","metadata":{"name":"` + name + `"},"spec":{"policyName":"` + policyName + `",
"matchResources":{"objectSelector":{"matchLabels":{"` + policyLabel + `":"` + name + `"}}}` + spec + `}}`}
}

// admissionPolicyScenarios are ValidatingAdmissionPolicies and MutatingAdmissionPolicies (GA and on by
// default in kube-apiserver v1.37) bound to labelled ConfigMaps: a denial, the same policy bound
// to warn and to audit, a policy with a ConfigMap as its parameter (found and missing), audit
// annotations, and mutations by apply configuration, one of which makes the object invalid.
func admissionPolicyScenarios() []scenario {
	const (
		vap, vapb     = "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"
		mapKind, mapb = "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"
	)
	cm := func(name, label, data string) string { return admissionConfigMap(name, policyLabel, label, data) }
	secret := `{"secret":"s3cr3t"}`
	return []scenario{{"admission policies", []step{
		{method: "POST", path: admissionCMs, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kuberef-params"},"data":{"forbidden":"banned"}}`},
		policy(vap, "kuberef-no-secrets", `"validations":[{"expression":"!has(object.data) || !('secret' in object.data)","message":"no secrets in configmaps"}],
"auditAnnotations":[{"key":"keys","valueExpression":"string(has(object.data) ? size(object.data) : 0)"}]`),
		policy(vap, "kuberef-names", `"paramKind":{"apiVersion":"v1","kind":"ConfigMap"},
"validations":[{"expression":"object.metadata.name != params.data.forbidden","messageExpression":"'the name ' + object.metadata.name + ' is forbidden'","reason":"Forbidden"}]`),
		policy(mapKind, "kuberef-label", `"failurePolicy":"Fail","reinvocationPolicy":"Never",
"mutations":[{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":"Object{metadata: Object.metadata{labels: {\"mutated\": \"by-policy\"}}}"}}]`),
		policy(mapKind, "kuberef-bad-label", `"failurePolicy":"Fail","reinvocationPolicy":"Never",
"mutations":[{"patchType":"JSONPatch","jsonPatch":{"expression":"[JSONPatch{op: \"add\", path: \"/metadata/labels/bad\", value: \"not a label value!\"}]"}}]`),
		policyBinding(vapb, "warn", "kuberef-no-secrets", `"validationActions":["Warn"]`),
		policyBinding(vapb, "audit", "kuberef-no-secrets", `"validationActions":["Audit"]`),
		policyBinding(vapb, "params", "kuberef-names", `"validationActions":["Deny"],"paramRef":{"name":"kuberef-params","namespace":"`+admissionNS+`","parameterNotFoundAction":"Deny"}`),
		policyBinding(vapb, "no-params", "kuberef-names", `"validationActions":["Deny"],"paramRef":{"name":"missing","namespace":"`+admissionNS+`","parameterNotFoundAction":"Deny"}`),
		policyBinding(vapb, "deny", "kuberef-no-secrets", `"validationActions":["Deny"]`),
		policyBinding(mapb, "mutate", "kuberef-label", ""),
		policyBinding(mapb, "bad-mutation", "kuberef-bad-label", ""),
		// Each server applies a binding once its informers have it (and, for a parameter, the
		// parameter's informer has synced): dry-run writes the last bindings refuse are
		// repeated until they are.
		{method: "POST", path: admissionCMs + "?dryRun=All", body: cm("probe", "deny", secret), waitFor: 422},
		{method: "POST", path: admissionCMs + "?dryRun=All", body: cm("banned", "params", ""), waitFor: 403},
		{method: "POST", path: admissionCMs + "?dryRun=All", body: cm("probe", "bad-mutation", ""), waitFor: 422},
		{method: "POST", path: admissionCMs, body: cm("p-denied", "deny", secret)},
		{method: "POST", path: admissionCMs, body: cm("p-allowed", "deny", `{"a":"1"}`)},
		{method: "POST", path: admissionCMs, body: cm("p-warned", "warn", secret)},
		{method: "POST", path: admissionCMs, body: cm("p-audited", "audit", secret)},
		{method: "POST", path: admissionCMs, body: cm("banned", "params", "")},
		{method: "POST", path: admissionCMs, body: cm("p-fine", "params", "")},
		{method: "POST", path: admissionCMs, body: cm("p-orphan", "no-params", "")},
		{method: "POST", path: admissionCMs, body: cm("p-mutated", "mutate", "")},
		{method: "GET", path: admissionCMs + "/p-mutated"},
		{method: "PUT", path: admissionCMs + "/p-allowed", body: cm("p-allowed", "deny", secret)},
		{method: "POST", path: admissionCMs, body: cm("p-bad", "bad-mutation", "")},
		{method: "DELETE", path: admissionAPI + "/validatingadmissionpolicybindings/deny"},
		{method: "DELETE", path: admissionAPI + "/validatingadmissionpolicies/kuberef-no-secrets"},
		{method: "DELETE", path: admissionAPI + "/mutatingadmissionpolicies/kuberef-bad-label"},
	}}}
}
