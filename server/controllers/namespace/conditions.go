package namespace

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// namespaceDeletionConditions are the status conditions the namespace controller maintains on a
// namespace being deleted, in the order it adds them, each with the reason and message it has
// while nothing is wrong.
var namespaceDeletionConditions = []struct {
	condition       corev1.NamespaceConditionType
	reason, message string
}{
	{corev1.NamespaceDeletionDiscoveryFailure, "ResourcesDiscovered", "All resources successfully discovered"},
	{corev1.NamespaceDeletionGVParsingFailure, "ParsedGroupVersions", "All legacy kube types successfully parsed"},
	{corev1.NamespaceDeletionContentFailure, "ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
	{corev1.NamespaceContentRemaining, "ContentRemoved", "All content successfully removed"},
	{corev1.NamespaceFinalizersRemaining, "ContentHasNoFinalizers", "All content-preserving finalizers finished"},
}

// deletionFailureConditions are the conditions a deletion pass reports as true: types whose
// content could not be deleted, content left, and the finalizers holding it. (Discovery is
// in-process here and cannot fail.)
func deletionFailureConditions(remaining remainingContent, failures []error) []corev1.NamespaceCondition {
	var out []corev1.NamespaceCondition
	failing := func(condition corev1.NamespaceConditionType, reason, message string) {
		out = append(out, corev1.NamespaceCondition{Type: condition, Status: corev1.ConditionTrue, Reason: reason, Message: message})
	}
	if len(failures) > 0 {
		messages := make([]string, 0, len(failures))
		for _, err := range failures {
			messages = append(messages, err.Error())
		}
		slices.Sort(messages)
		failing(corev1.NamespaceDeletionContentFailure, "ContentDeletionFailed",
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(failures), strings.Join(messages, ", ")))
	}
	if len(remaining.byResource) > 0 {
		failing(corev1.NamespaceContentRemaining, "SomeResourcesRemain", "Some resources are remaining: "+
			strings.Join(sortedCounts(remaining.byResource, func(gr schema.GroupResource, n int) string {
				return fmt.Sprintf("%s.%s has %d resource instances", gr.Resource, gr.Group, n)
			}), ", "))
	}
	if len(remaining.byFinalizer) > 0 {
		failing(corev1.NamespaceFinalizersRemaining, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: "+
			strings.Join(sortedCounts(remaining.byFinalizer, func(f string, n int) string {
				return fmt.Sprintf("%s in %d resource instances", f, n)
			}), ", "))
	}
	return out
}

// sortedCounts formats each count, sorted, for a condition's message.
func sortedCounts[K comparable](counts map[K]int, format func(K, int) string) []string {
	out := make([]string, 0, len(counts))
	for k, n := range counts {
		out = append(out, format(k, n))
	}
	slices.Sort(out)
	return out
}

// setDeletionConditions sets each deletion condition on status: the failing one if given, the
// condition's all-is-well variant otherwise. A condition whose status flips gets now as its
// lastTransitionTime; changed says whether anything differs.
func setDeletionConditions(status *corev1.NamespaceStatus, failing []corev1.NamespaceCondition, now metav1.Time) (changed bool) {
	for _, d := range namespaceDeletionConditions {
		want := corev1.NamespaceCondition{Type: d.condition, Status: corev1.ConditionFalse, Reason: d.reason, Message: d.message}
		if i := slices.IndexFunc(failing, func(c corev1.NamespaceCondition) bool { return c.Type == d.condition }); i >= 0 {
			want = failing[i]
		}
		want.LastTransitionTime = now
		i := slices.IndexFunc(status.Conditions, func(c corev1.NamespaceCondition) bool { return c.Type == d.condition })
		if i < 0 {
			status.Conditions = append(status.Conditions, want)
			changed = true
			continue
		}
		have := &status.Conditions[i]
		if have.Status == want.Status && have.Reason == want.Reason && have.Message == want.Message {
			continue
		}
		if have.Status == want.Status {
			want.LastTransitionTime = have.LastTransitionTime
		}
		*have = want
		changed = true
	}
	return changed
}
