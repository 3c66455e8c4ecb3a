package namespace

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sqlkube/sqlkube/server/controllers"
	"github.com/sqlkube/sqlkube/server/follow"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// namespaceFinalizer is the spec.finalizers entry kube-apiserver gives every namespace, which the
// namespace controller removes once the namespace's content is gone.
const namespaceFinalizer = corev1.FinalizerKubernetes

// namespaceController does what kube-controller-manager's namespace controller does: for a
// namespace being deleted, it deletes everything in it, reports progress in the namespace's
// status conditions, and once nothing is left removes the kubernetes finalizer through
// /finalize, which deletes the namespace unless other finalizers hold it.
type namespaceController struct {
	deps controllers.Deps
	// namespaces is the served namespaces type.
	namespaces *resource.Resource
}

// Run runs the namespace controller until ctx ends. namespaces is the served namespaces type.
func Run(ctx context.Context, deps controllers.Deps, namespaces *resource.Resource) {
	c := &namespaceController{deps: deps, namespaces: namespaces}
	controllers.SyncNames(ctx, deps, namespaces.StorageName, c, "namespace controller: deleting a namespace's content")
}

// NeedsSync reports whether the stored namespace o awaits the removal of its content.
func (c *namespaceController) NeedsSync(o sqlstore.Object) bool {
	var ns corev1.Namespace
	return storedobj.UnmarshalStored(o.Value, &ns) == nil && awaitsContentRemoval(&ns)
}

// awaitsContentRemoval: the namespace is being deleted and still waits for this controller.
func awaitsContentRemoval(ns *corev1.Namespace) bool {
	return ns.DeletionTimestamp != nil && slices.Contains(ns.Spec.Finalizers, namespaceFinalizer)
}

// Sync makes one pass over the namespace name; done is false when it must be looked at again
// (content remains, or a write failed or conflicted).
func (c *namespaceController) Sync(ctx context.Context, name string) (done bool, err error) {
	ref := registry.Ref{Resource: c.namespaces, Name: name}
	ns, err := c.getNamespace(ctx, ref)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil || !awaitsContentRemoval(ns) {
		return err == nil, err
	}
	remaining, failures := c.deleteContent(ctx, name)
	if ns, err = c.updateConditions(ctx, ref, ns, remaining, failures); err != nil {
		return controllers.WriteOutcome(err)
	}
	if len(failures) > 0 || len(remaining.byResource) > 0 {
		return false, errors.Join(failures...)
	}
	return c.finalize(ctx, ref, ns)
}

func (c *namespaceController) getNamespace(ctx context.Context, ref registry.Ref) (*corev1.Namespace, error) {
	stored, err := c.deps.Registry.Get(ctx, ref, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{}
	if err := storedobj.UnmarshalStored(stored.Value, ns); err != nil {
		return nil, err
	}
	return ns, nil
}

// remainingContent counts what is left in a namespace after a deletion pass.
type remainingContent struct {
	byResource  map[schema.GroupResource]int
	byFinalizer map[string]int
}

// deleteContent deletes every object in namespace, of every namespaced type, as the namespace
// controller does (background propagation), and counts what remains: objects held by their
// finalizers, which it leaves to their controllers. failures has one error per type it could
// not clear.
func (c *namespaceController) deleteContent(ctx context.Context, namespace string) (remaining remainingContent, failures []error) {
	remaining = remainingContent{byResource: map[schema.GroupResource]int{}, byFinalizer: map[string]int{}}
	resources := c.deps.Catalog.StorageResources()
	for _, storageName := range slices.Sorted(maps.Keys(resources)) {
		res := resources[storageName]
		if !res.Namespaced {
			continue
		}
		if err := c.deleteResourceContent(ctx, res, namespace, &remaining); err != nil {
			failures = append(failures, err)
		}
	}
	return remaining, failures
}

// deleteResourceContent deletes the objects of one type in namespace, then counts those left.
func (c *namespaceController) deleteResourceContent(ctx context.Context, res *resource.Resource, namespace string, remaining *remainingContent) error {
	background := metav1.DeletePropagationBackground
	err := follow.Pages(ctx, c.deps.Store, res.StorageName, namespace, func(page []sqlstore.Object) error {
		for _, o := range page {
			_, _, err := c.deps.Registry.Delete(ctx, registry.Ref{Resource: res, Namespace: o.Namespace, Name: o.Name}, &metav1.DeleteOptions{PropagationPolicy: &background})
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.countRemaining(ctx, res, namespace, remaining)
}

// countRemaining adds the objects of res left in namespace after their deletion to remaining.
// Objects without finalizers should have gone: as the namespace controller, that is reported as
// a failure.
func (c *namespaceController) countRemaining(ctx context.Context, res *resource.Resource, namespace string, remaining *remainingContent) error {
	left, held := 0, false
	err := follow.Pages(ctx, c.deps.Store, res.StorageName, namespace, func(page []sqlstore.Object) error {
		for _, o := range page {
			var meta storedobj.MetadataOnly
			if err := storedobj.UnmarshalStored(o.Value, &meta); err != nil {
				return err
			}
			for _, f := range meta.Metadata.Finalizers {
				remaining.byFinalizer[f]++
				held = true
			}
		}
		left += len(page)
		return nil
	})
	if err != nil || left == 0 {
		return err
	}
	remaining.byResource[schema.GroupResource{Group: res.Group, Resource: res.Name}] += left
	if !held {
		gvr := schema.GroupVersionResource{Group: res.Group, Version: res.Version, Resource: res.Name}
		return fmt.Errorf("unexpected items still remain in namespace: %s for gvr: %v", namespace, gvr)
	}
	return nil
}

// updateConditions records the pass's outcome in the namespace's status conditions, when that
// changes them, and returns the namespace as it is now stored.
func (c *namespaceController) updateConditions(ctx context.Context, ref registry.Ref, ns *corev1.Namespace, remaining remainingContent, failures []error) (*corev1.Namespace, error) {
	updated := ns.DeepCopy()
	if !setDeletionConditions(&updated.Status, deletionFailureConditions(remaining, failures), metav1.Now()) {
		return ns, nil
	}
	stored, err := c.writeNamespace(ctx, ref, "status", updated)
	if err != nil {
		return nil, err
	}
	out := &corev1.Namespace{}
	return out, storedobj.UnmarshalStored(stored.Value, out)
}

// finalize removes the kubernetes finalizer from spec.finalizers, as a PUT on /finalize does:
// without other finalizers, that deletes the namespace.
func (c *namespaceController) finalize(ctx context.Context, ref registry.Ref, ns *corev1.Namespace) (done bool, err error) {
	finalized := ns.DeepCopy()
	finalized.Spec.Finalizers = slices.DeleteFunc(finalized.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == namespaceFinalizer })
	_, err = c.writeNamespace(ctx, ref, "finalize", finalized)
	return controllers.WriteOutcome(err)
}

// writeNamespace updates the namespace's subresource (status or finalize) from ns, on the
// condition that the namespace has not changed since ns was read.
func (c *namespaceController) writeNamespace(ctx context.Context, ref registry.Ref, subresource string, ns *corev1.Namespace) (sqlstore.Object, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ns)
	if err != nil {
		return sqlstore.Object{}, err
	}
	ref.Subresource = subresource
	stored, _, err := c.deps.Registry.Update(ctx, ref, &unstructured.Unstructured{Object: content}, &metav1.UpdateOptions{FieldManager: controllers.FieldManager})
	return stored, err
}
