package kuberef

// knownStep names one step of one scenario.
type knownStep struct {
	scenario string
	step     int
}

// knownDifferences are the differences from kube that remain, each with its reason; they are
// logged, not failed, and one that disappears fails so that it is removed here. docs/conformance.md
// explains each.
var knownDifferences = map[knownStep]string{
	// Deliberate: malformed input is a 400 in sqlkube, never a 500.
	{"watch parameter errors", 3}: "deliberate: a watch from resourceVersion=abc is 400 BadRequest, kube answers 500",
	{"watch parameter errors", 7}: "deliberate: a negative timeoutSeconds ends the watch with a 504 Timeout event, kube with a 500",
	// Deliberate: sqlkube keeps history until compaction, kube's watch cache only its window.
	{"watch parameter errors", 4}: "deliberate: a watch from resourceVersion=1 replays history sqlkube still has; kube's watch cache answers 410",
	// Deliberate: continue tokens are each server's own encoding.
	{"continue errors", 5}: "deliberate: a continue token forged in kube's encoding is refused",
	// Deliberate: the whole kube-apiserver's aggregator serves the OpenAPI v3 root without a
	// Content-Type (net/http sniffs text/plain), as sqlkube does; apiextensions-apiserver alone
	// says application/json. TestFullConformance compares it with the whole kube-apiserver.
	{"openapi", 1}: "deliberate: the /openapi/v3 root is text/plain as the whole kube-apiserver serves it",
}

// knownFullDifferences are the differences from the full kube-apiserver that remain, as
// knownDifferences are for the apiextensions reference.
var knownFullDifferences = map[knownStep]string{}
