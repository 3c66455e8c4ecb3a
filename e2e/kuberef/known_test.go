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
}

// knownFullDifferences are the differences from the full kube-apiserver that remain, as
// knownDifferences are for the apiextensions reference.
var knownFullDifferences = map[knownStep]string{
	// Not done yet: kube's field manager runs on every create, a review's too, and records the
	// request's fields as an Update by the client's user agent. sqlkube's review handler runs no
	// field manager (the built-ins' type converter, kube's definitions, reads reviews: running it
	// there is what remains). Nothing is stored; the decisions and reasons agree.
	{"reviews of one's own access", 0}: reviewManagedFields,
	{"reviews of one's own access", 1}: reviewManagedFields,
	{"reviews of one's own access", 2}: reviewManagedFields,
	{"reviews of another's access", 0}: reviewManagedFields,
	{"reviews of another's access", 1}: reviewManagedFields,
	// The same for a TokenRequest (the token subresource) and TokenReviews: their answers are
	// otherwise kube's (the ServiceAccount's uid, system:authenticated, "invalid bearer token").
	{"token reviews", 1}: tokenManagedFields,
	{"token reviews", 2}: tokenManagedFields,
	{"token reviews", 3}: tokenManagedFields,
}

const reviewManagedFields = "not done yet: an access review's answer has no managedFields entry; kube's has the client's Update"

const tokenManagedFields = "not done yet: a TokenRequest's or TokenReview's answer has no managedFields entry; kube's has the client's Update"
