package kuberef

// knownOracleDifferences are the differences from the full kube-apiserver in the answers of the
// admission and watch-as-identity scenarios, as knownFullDifferences are for the others.
var knownOracleDifferences = map[knownStep]string{}

// knownAuditDifferences are the differences in the audit events of the full comparison's
// requests (the answers agreeing or marked apart). docs/conformance.md explains each.
var knownAuditDifferences = map[knownStep]string{}

// oracleScenarios are every scenario of the full comparison, the known differences of their
// answers and audit events marked; hook serves the admission webhooks.
func oracleScenarios(hook *admissionWebhook) []scenario {
	all := concat(fullScenarios(), markKnown(concat(webhookScenarios(hook), admissionPolicyScenarios(), watchIdentityScenarios()), knownOracleDifferences))
	return markSteps(all, knownAuditDifferences, func(s *step, reason string) { s.knownAudit = reason })
}
