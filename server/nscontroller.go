package server

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
	s     *Server
	queue *workQueue[string] // namespace names
}

func (s *Server) runNamespaceController(ctx context.Context) {
	c := &namespaceController{s: s, queue: newWorkQueue[string]()}
	go followResource(ctx, s, "namespaces", c)
	for {
		name, ok := c.queue.next(ctx)
		if !ok {
			return
		}
		done, err := c.sync(ctx, name)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("namespace controller: deleting a namespace's content", "namespace", name, "err", err)
		}
		if !done {
			c.queue.addAfter(ctx, name, controllerRetry)
		}
	}
}

func (c *namespaceController) listed(objects []sqlstore.Object, _ int64) {
	for _, o := range objects {
		c.observe(o)
	}
}

func (c *namespaceController) changed(ev *sqlstore.Event) {
	if ev.Op != sqlstore.OpDelete {
		c.observe(ev.Object)
	}
}

func (c *namespaceController) observe(o sqlstore.Object) {
	var ns corev1.Namespace
	if err := jsonUnmarshalStored(o.Value, &ns); err == nil && awaitsContentRemoval(&ns) {
		c.queue.add(o.Name)
	}
}

// awaitsContentRemoval: the namespace is being deleted and still waits for this controller.
func awaitsContentRemoval(ns *corev1.Namespace) bool {
	return ns.DeletionTimestamp != nil && slices.Contains(ns.Spec.Finalizers, namespaceFinalizer)
}

// sync makes one pass over the namespace name; done is false when it must be looked at again
// (content remains, or a write failed or conflicted).
func (c *namespaceController) sync(ctx context.Context, name string) (done bool, err error) {
	req, err := c.s.namespaceRequest(name)
	if err != nil {
		return false, err
	}
	req.manager = controllerManager
	ns, err := c.getNamespace(ctx, req)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil || !awaitsContentRemoval(ns) {
		return err == nil, err
	}
	remaining, failures := c.deleteContent(ctx, name)
	if ns, err = c.updateConditions(ctx, req, ns, remaining, failures); err != nil {
		return writeOutcome(err)
	}
	if len(failures) > 0 || len(remaining.byResource) > 0 {
		return false, errors.Join(failures...)
	}
	return c.finalize(ctx, req, ns)
}

func (c *namespaceController) getNamespace(ctx context.Context, req *request) (*corev1.Namespace, error) {
	stored, err := c.s.store.Get(ctx, req.key())
	if err != nil {
		return nil, storageError(err, req.gr, req.name)
	}
	ns := &corev1.Namespace{}
	if err := jsonUnmarshalStored(stored.Value, ns); err != nil {
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
	resources := c.s.registry.storageResources()
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
func (c *namespaceController) deleteResourceContent(ctx context.Context, res *Resource, namespace string, remaining *remainingContent) error {
	objects, err := c.listIn(ctx, res, namespace)
	if err != nil || len(objects) == 0 {
		return err
	}
	background := metav1.DeletePropagationBackground
	for _, o := range objects {
		_, _, err := c.s.delete(ctx, controllerRequest(res, o.Key), &metav1.DeleteOptions{PropagationPolicy: &background})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	if objects, err = c.listIn(ctx, res, namespace); err != nil || len(objects) == 0 {
		return err
	}
	return countRemaining(res, namespace, objects, remaining)
}

// countRemaining adds objects, left after their deletion, to remaining. Objects without
// finalizers should have gone: as the namespace controller, that is reported as a failure.
func countRemaining(res *Resource, namespace string, objects []sqlstore.Object, remaining *remainingContent) error {
	held := false
	for _, o := range objects {
		var meta partialObject
		if err := jsonUnmarshalStored(o.Value, &meta); err != nil {
			return err
		}
		for _, f := range meta.Metadata.Finalizers {
			remaining.byFinalizer[f]++
			held = true
		}
	}
	remaining.byResource[schema.GroupResource{Group: res.Group, Resource: res.Name}] += len(objects)
	if !held {
		gvr := schema.GroupVersionResource{Group: res.Group, Version: res.Version, Resource: res.Name}
		return fmt.Errorf("unexpected items still remain in namespace: %s for gvr: %v", namespace, gvr)
	}
	return nil
}

func (c *namespaceController) listIn(ctx context.Context, res *Resource, namespace string) ([]sqlstore.Object, error) {
	var objects []sqlstore.Object
	_, err := c.s.store.List(ctx, sqlstore.ListOptions{Resource: res.StorageName, Namespace: namespace}, func(o sqlstore.Object) error {
		objects = append(objects, o)
		return nil
	})
	return objects, err
}

// updateConditions records the pass's outcome in the namespace's status conditions, when that
// changes them, and returns the namespace as it is now stored.
func (c *namespaceController) updateConditions(ctx context.Context, req *request, ns *corev1.Namespace, remaining remainingContent, failures []error) (*corev1.Namespace, error) {
	updated := ns.DeepCopy()
	if !setDeletionConditions(&updated.Status, deletionFailureConditions(remaining, failures), metav1.Now()) {
		return ns, nil
	}
	stored, err := c.writeNamespace(ctx, req, updated, replaceStatus)
	if err != nil {
		return nil, err
	}
	out := &corev1.Namespace{}
	return out, jsonUnmarshalStored(stored.Value, out)
}

// finalize removes the kubernetes finalizer from spec.finalizers, as a PUT on /finalize does:
// without other finalizers, that deletes the namespace.
func (c *namespaceController) finalize(ctx context.Context, req *request, ns *corev1.Namespace) (done bool, err error) {
	finalized := ns.DeepCopy()
	finalized.Spec.Finalizers = slices.DeleteFunc(finalized.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == namespaceFinalizer })
	_, err = c.writeNamespace(ctx, req, finalized, replaceFinalizers)
	return writeOutcome(err)
}

// writeOutcome reads the error of a write to the namespace: NotFound means another replica
// finished the deletion first; Conflict that the namespace changed meanwhile, so the next pass
// looks again.
func writeOutcome(err error) (done bool, _ error) {
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return true, nil
	case apierrors.IsConflict(err):
		return false, nil
	}
	return false, err
}

// writeNamespace updates the namespace's subresource (status or finalize) from ns, on the
// condition that the namespace has not changed since ns was read.
func (c *namespaceController) writeNamespace(ctx context.Context, req *request, ns *corev1.Namespace, mode updateMode) (sqlstore.Object, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ns)
	if err != nil {
		return sqlstore.Object{}, err
	}
	stored, _, err := c.s.update(ctx, req, &unstructured.Unstructured{Object: content}, mode)
	return stored, err
}
