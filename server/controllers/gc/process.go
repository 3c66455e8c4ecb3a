package gc

import (
	"bytes"
	"context"
	"errors"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sqlkube/sqlkube/server/controllers"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// errStaleObject: the object changed or went between its read and the collector's write; the
// item is looked at again.
var errStaleObject = errors.New("garbage collector: object changed meanwhile")

// processDependent looks at the owners of the object at key, as the real collector's
// attemptToDeleteItem does: owners that still exist and are not being deleted in the
// foreground keep it; with some left, references to the others are removed; with none left,
// it is deleted, in the foreground when an owner waits for it and it has dependents itself.
func (gc *garbageCollector) processDependent(ctx context.Context, key sqlstore.Key) error {
	res, obj, err := gc.read(ctx, key)
	if err != nil || obj == nil || obj.GetDeletionTimestamp() != nil || len(obj.GetOwnerReferences()) == 0 {
		return err // gone, or being deleted: its own finalizers' controllers finish it
	}
	var solid, dangling, waiting []types.UID
	for _, ref := range obj.GetOwnerReferences() {
		state, err := gc.ownerState(ctx, key, ref)
		if err != nil {
			return err
		}
		switch state {
		case ownerAbsent:
			dangling = append(dangling, ref.UID)
		case ownerDeletingDependents:
			waiting = append(waiting, ref.UID)
		default:
			solid = append(solid, ref.UID)
		}
	}
	switch {
	case len(solid) > 0 && len(dangling)+len(waiting) > 0:
		return gc.removeOwnerReferences(ctx, res, obj, append(dangling, waiting...))
	case len(solid) > 0:
		return nil
	case len(waiting) > 0 && len(gc.dependentsOf(obj.GetUID())) > 0:
		return gc.deleteDependent(ctx, res, obj, metav1.DeletePropagationForeground)
	}
	return gc.deleteDependent(ctx, res, obj, propagationFromFinalizers(obj.GetFinalizers()))
}

// propagationFromFinalizers is the policy an object without owners is deleted with: the one its
// finalizers already ask for, Background otherwise.
func propagationFromFinalizers(finalizers []string) metav1.DeletionPropagation {
	switch {
	case slices.Contains(finalizers, metav1.FinalizerOrphanDependents):
		return metav1.DeletePropagationOrphan
	case slices.Contains(finalizers, metav1.FinalizerDeleteDependents):
		return metav1.DeletePropagationForeground
	}
	return metav1.DeletePropagationBackground
}

// processOwner carries out the garbage collector's finalizer on an object being deleted:
// orphan removes the references to it from its dependents; foregroundDeletion deletes them and
// waits for those that block it. Either finalizer is then removed, which deletes the object
// unless other finalizers hold it.
func (gc *garbageCollector) processOwner(ctx context.Context, key sqlstore.Key) error {
	res, obj, err := gc.read(ctx, key)
	if err != nil || obj == nil || obj.GetDeletionTimestamp() == nil {
		return err
	}
	finalizers := obj.GetFinalizers()
	dependents := gc.dependentsOf(obj.GetUID())
	switch {
	case slices.Contains(finalizers, metav1.FinalizerOrphanDependents):
		for _, dependent := range dependents {
			if err := gc.orphan(ctx, dependent, obj.GetUID()); err != nil {
				return err
			}
		}
	case slices.Contains(finalizers, metav1.FinalizerDeleteDependents):
		for _, dependent := range dependents {
			gc.queue.Add(gcItem{key: dependent})
		}
		if len(gc.blockingDependentsOf(obj.GetUID())) > 0 {
			return nil // their deletion queues this owner again
		}
	default:
		return nil
	}
	if err := gc.checkNoOtherDependents(ctx, obj.GetUID(), dependents); err != nil {
		return err
	}
	return gc.removeFinalizer(ctx, res, obj, propagationFinalizerOf(finalizers))
}

// propagationFinalizerOf is the garbage collector's finalizer among finalizers (orphan first,
// as validation allows only one of them).
func propagationFinalizerOf(finalizers []string) string {
	if slices.Contains(finalizers, metav1.FinalizerOrphanDependents) {
		return metav1.FinalizerOrphanDependents
	}
	return metav1.FinalizerDeleteDependents
}

// errUnhandledDependents: storage holds dependents of an owner that its pass did not handle;
// the owner is looked at again once they are indexed.
var errUnhandledDependents = errors.New("garbage collector: dependents not handled yet")

// checkNoOtherDependents scans storage for objects that refer to owner but are not among the
// handled ones (the index's dependents when the pass began), and indexes them. Each type has its
// own watch, so the index may lag behind the owner's deletion for dependents of other types, and
// may gain one while the pass runs; removing an owner's orphan or foregroundDeletion finalizer
// cannot be undone, so it is done only once storage confirms that the pass saw every dependent.
// This scan reads every object, but only once per owner deleted with Orphan or Foreground;
// Background deletions never need it.
func (gc *garbageCollector) checkNoOtherDependents(ctx context.Context, owner types.UID, handled []sqlstore.Key) error {
	mentionsOwner := func(o sqlstore.Object) bool { return bytes.Contains(o.Value, []byte(owner)) }
	seen := make(map[sqlstore.Key]bool, len(handled))
	for _, key := range handled {
		seen[key] = true
	}
	missed := false
	for resource := range gc.deps.Catalog.StorageResources() {
		_, err := gc.deps.Store.List(ctx, sqlstore.ListOptions{Resource: resource, Filter: mentionsOwner}, func(o sqlstore.Object) error {
			if gc.refersTo(o, owner) && !seen[o.Key] {
				gc.observe(o)
				missed = true
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if missed {
		return errUnhandledDependents
	}
	return nil
}

// refersTo says whether the stored object o has an ownerReference to owner.
func (gc *garbageCollector) refersTo(o sqlstore.Object, owner types.UID) bool {
	var obj storedobj.MetadataOnly
	return storedobj.UnmarshalStored(o.Value, &obj) == nil &&
		slices.ContainsFunc(obj.Metadata.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == owner })
}

// orphan removes the dependent's references to owner.
func (gc *garbageCollector) orphan(ctx context.Context, dependent sqlstore.Key, owner types.UID) error {
	res, obj, err := gc.read(ctx, dependent)
	if err != nil || obj == nil {
		return err
	}
	return gc.removeOwnerReferences(ctx, res, obj, []types.UID{owner})
}

// ownerStateKind says what an ownerReference points to.
type ownerStateKind int

const (
	ownerSolid              ownerStateKind = iota // exists (or cannot be told): keeps its dependents
	ownerAbsent                                   // gone, or replaced by an object with another uid
	ownerDeletingDependents                       // being deleted in the foreground
)

// ownerState reads the owner ref names (from the dependent at key) from storage. A reference
// to a kind the server does not serve, or to a namespaced owner from a cluster-scoped
// dependent, cannot be resolved: it counts as an existing owner, so nothing is deleted on a
// guess.
func (gc *garbageCollector) ownerState(ctx context.Context, dependent sqlstore.Key, ref metav1.OwnerReference) (ownerStateKind, error) {
	key, ok := gc.ownerKey(dependent, ref)
	if !ok {
		return ownerSolid, nil
	}
	stored, err := gc.deps.Store.Get(ctx, key)
	if errors.Is(err, sqlstore.ErrNotFound) {
		return ownerAbsent, nil
	}
	if err != nil {
		return ownerSolid, err
	}
	var owner storedobj.MetadataOnly
	if err := storedobj.UnmarshalStored(stored.Value, &owner); err != nil {
		return ownerSolid, err
	}
	switch {
	case owner.Metadata.UID != ref.UID:
		return ownerAbsent, nil
	case owner.Metadata.DeletionTimestamp != nil && slices.Contains(owner.Metadata.Finalizers, metav1.FinalizerDeleteDependents):
		return ownerDeletingDependents, nil
	}
	return ownerSolid, nil
}

// ownerKey is where the owner ref names is stored: in the dependent's namespace when the
// owner's type is namespaced.
func (gc *garbageCollector) ownerKey(dependent sqlstore.Key, ref metav1.OwnerReference) (sqlstore.Key, bool) {
	res, ok := gc.deps.Catalog.ResourceForKind(ref.APIVersion, ref.Kind)
	if !ok || (res.Namespaced && dependent.Namespace == "") {
		return sqlstore.Key{}, false
	}
	key := sqlstore.Key{Resource: res.StorageName, Name: ref.Name}
	if res.Namespaced {
		key.Namespace = dependent.Namespace
	}
	return key, true
}

// read gets the object at key as its type serves it; obj is nil when it is gone or its type is
// no longer served.
func (gc *garbageCollector) read(ctx context.Context, key sqlstore.Key) (*resource.Resource, *unstructured.Unstructured, error) {
	res, ok := gc.deps.Catalog.StorageResources()[key.Resource]
	if !ok {
		return nil, nil, nil
	}
	stored, err := gc.deps.Store.Get(ctx, key)
	if errors.Is(err, sqlstore.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	obj, err := storedobj.DecodeServed(res, stored.Value)
	return res, obj, err
}

// deleteDependent deletes obj with policy, provided it is still the version the collector
// looked at (uid and resourceVersion preconditions), as the real collector does.
func (gc *garbageCollector) deleteDependent(ctx context.Context, res *resource.Resource, obj *unstructured.Unstructured, policy metav1.DeletionPropagation) error {
	uid, version := obj.GetUID(), obj.GetResourceVersion()
	opts := &metav1.DeleteOptions{
		PropagationPolicy: &policy,
		Preconditions:     &metav1.Preconditions{UID: &uid, ResourceVersion: &version},
	}
	_, _, err := gc.deps.Registry.Delete(ctx, refOf(res, obj), opts)
	if apierrors.IsForbidden(err) {
		return nil // an immortal namespace: kube-apiserver refuses the collector too, whatever the owners
	}
	return tolerateGone(err)
}

// removeOwnerReferences removes obj's references to owners.
func (gc *garbageCollector) removeOwnerReferences(ctx context.Context, res *resource.Resource, obj *unstructured.Unstructured, owners []types.UID) error {
	refs := obj.GetOwnerReferences()
	kept := slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool { return slices.Contains(owners, r.UID) })
	if len(kept) == len(refs) {
		return nil
	}
	if len(kept) == 0 {
		kept = nil // no empty list in the stored object
	}
	obj.SetOwnerReferences(kept)
	return gc.update(ctx, res, obj)
}

// removeFinalizer removes finalizer from obj, which deletes it if it was the last one.
func (gc *garbageCollector) removeFinalizer(ctx context.Context, res *resource.Resource, obj *unstructured.Unstructured, finalizer string) error {
	finalizers := slices.DeleteFunc(obj.GetFinalizers(), func(f string) bool { return f == finalizer })
	if len(finalizers) == 0 {
		finalizers = nil
	}
	obj.SetFinalizers(finalizers)
	return gc.update(ctx, res, obj)
}

// update writes obj through the update path, on the condition that it is still the version
// read (its resourceVersion).
func (gc *garbageCollector) update(ctx context.Context, res *resource.Resource, obj *unstructured.Unstructured) error {
	_, _, err := gc.deps.Registry.Update(ctx, refOf(res, obj), obj, &metav1.UpdateOptions{FieldManager: controllers.FieldManager})
	return tolerateGone(err)
}

// tolerateGone: a NotFound means the work is done (by another replica, or the object went);
// a Conflict that the object changed meanwhile, so the item is looked at again.
func tolerateGone(err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return errStaleObject
	}
	return err
}

func refOf(res *resource.Resource, obj *unstructured.Unstructured) registry.Ref {
	return registry.Ref{Resource: res, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}
