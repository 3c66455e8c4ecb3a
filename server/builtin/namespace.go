package builtin

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"

	"github.com/sqlkube/sqlkube/server/resource"
)

// namespaceStrategy is the Namespace type's strategy: a built-in whose name is also a label,
// whose spec.finalizers (the namespace controller's) hold its deletion as metadata.finalizers
// do, and whose phase says when it is being deleted, as kube-apiserver's namespace strategy
// and storage have it.
func namespaceStrategy(res *resource.Resource) resource.TypedStrategy {
	return namespaces{typed(rules[corev1.Namespace]{adjust: corev1defaults.SetDefaults_Namespace, validate: validateNamespace, table: namespaceTable, untracked: true,
		fields: map[string][]string{"status.phase": {"status", "phase"}}})(res)}
}

type namespaces struct{ resource.TypedStrategy }

// NewEmpty is the Go type's zero value, which a create's managedFields are recorded against, as
// kube-apiserver's are: the empty spec and status a decoded namespace has are no one's.
func (namespaces) NewEmpty() *unstructured.Unstructured {
	return emptyObject[corev1.Namespace](corev1.SchemeGroupVersion.WithKind("Namespace"))
}

// PrepareForCreate sets what kube-apiserver sets on a new namespace: the label naming it,
// the kubernetes finalizer, and the Active phase.
func (namespaces) PrepareForCreate(_ context.Context, ns *unstructured.Unstructured) {
	setNamespaceNameLabel(ns)
	// kube-apiserver keeps the finalizers the client asked for and makes sure "kubernetes" is one
	// of them: the namespace controller removes it once the namespace is empty.
	finalizers, _, _ := unstructured.NestedStringSlice(ns.Object, "spec", "finalizers")
	if !slices.Contains(finalizers, "kubernetes") {
		finalizers = append(finalizers, "kubernetes")
	}
	_ = unstructured.SetNestedStringSlice(ns.Object, finalizers, "spec", "finalizers")
	ns.Object["status"] = map[string]interface{}{"phase": "Active"}
}

// Canonicalize labels the namespace with its name, which generateName may have just made.
func (namespaces) Canonicalize(ns *unstructured.Unstructured) { setNamespaceNameLabel(ns) }

// PrepareForUpdate keeps the name label, and the finalizers and status only the finalize
// and status subresources change, as kube-apiserver's namespace strategy does.
func (namespaces) PrepareForUpdate(_ context.Context, ns, old *unstructured.Unstructured) {
	setNamespaceNameLabel(ns)
	finalizers, found, _ := unstructured.NestedFieldCopy(old.Object, "spec", "finalizers")
	if found {
		_ = unstructured.SetNestedField(ns.Object, finalizers, "spec", "finalizers")
	} else {
		unstructured.RemoveNestedField(ns.Object, "spec", "finalizers")
	}
	if status, ok := old.Object["status"]; ok {
		ns.Object["status"] = runtime.DeepCopyJSONValue(status)
	}
}

// StatusStrategy is kube's namespace status strategy: a /status write keeps the request's
// metadata (labels, annotations) and status, and only the spec is the stored one.
func (n namespaces) StatusStrategy() resource.StatusStrategy {
	return namespaceStatus{n.TypedStrategy.StatusStrategy()}
}

type namespaceStatus struct{ resource.StatusStrategy }

func (namespaceStatus) TakesWholeObject() {}

// PrepareForUpdate keeps the stored spec, and the name label kube's decoding gives every
// namespace.
func (namespaceStatus) PrepareForUpdate(_ context.Context, ns, old *unstructured.Unstructured) {
	setNamespaceNameLabel(ns)
	if spec, ok := old.Object["spec"]; ok {
		ns.Object["spec"] = runtime.DeepCopyJSONValue(spec)
	} else {
		delete(ns.Object, "spec")
	}
}

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

func setNamespaceNameLabel(ns *unstructured.Unstructured) {
	labels := ns.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["kubernetes.io/metadata.name"] = ns.GetName()
	ns.SetLabels(labels)
}
