package builtin

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/kubernetes/pkg/registry/core/namespace"

	"github.com/sqlkube/sqlkube/server/resource"
)

// namespaceStrategy is the Namespace type's strategy: kube's (which labels a namespace with its
// name, gives it the kubernetes finalizer and the Active phase, and keeps the finalizers and
// status only /finalize and /status write), with what kube's namespace storage adds around its
// deletion: spec.finalizers (the namespace controller's) hold it as metadata.finalizers do, and
// the phase says it is being deleted.
func namespaceStrategy(res *resource.Resource) resource.TypedStrategy {
	return namespaces{kube[corev1.Namespace](kubeRules{
		strategy: namespace.Strategy, status: namespace.StatusStrategy, returnsDeleted: true,
		fields: map[string][]string{"status.phase": {"status", "phase"}},
	})(res).(*kubeTypeStrategy)}
}

type namespaces struct{ *kubeTypeStrategy }

// HoldsDeletion is true while spec.finalizers has any: the namespace controller empties it
// once the namespace's content is gone.
func (namespaces) HoldsDeletion(ns *unstructured.Unstructured) bool {
	finalizers, _, _ := unstructured.NestedSlice(ns.Object, "spec", "finalizers")
	return len(finalizers) > 0
}

// PrepareForFinalizing records that the namespace is being deleted. kube's namespace storage
// sets a deletionTimestamp alone, with no deletionGracePeriodSeconds.
func (namespaces) PrepareForFinalizing(ns *unstructured.Unstructured) {
	ns.SetDeletionGracePeriodSeconds(nil)
	_ = unstructured.SetNestedField(ns.Object, "Terminating", "status", "phase")
}
