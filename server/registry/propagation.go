package registry

import (
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// setPropagationFinalizers gives obj, which a delete is about to delete or mark as being
// deleted, the garbage collector's finalizers its DeleteOptions ask for, as kube-apiserver's
// store does: orphan for Orphan (or orphanDependents=true), foregroundDeletion for Foreground,
// neither for Background. Without a policy the ones obj has stay, and without those the type's
// default applies (orphanByDefault: batch/v1 Jobs and v1 ReplicationControllers orphan, every
// other type served here, custom resources included, is Background). changed says whether the
// finalizers differ, so that a repeated delete updates them.
func setPropagationFinalizers(obj *unstructured.Unstructured, opts *metav1.DeleteOptions, orphanByDefault bool) (changed bool) {
	current := obj.GetFinalizers()
	orphan, foreground := propagationFinalizersWanted(current, opts)
	if !orphan && !foreground && orphanByDefault {
		orphan = true
	}
	finalizers := slices.DeleteFunc(slices.Clone(current), IsPropagationFinalizer)
	if orphan {
		finalizers = append(finalizers, metav1.FinalizerOrphanDependents)
	}
	if foreground {
		finalizers = append(finalizers, metav1.FinalizerDeleteDependents)
	}
	if sameStrings(finalizers, current) {
		return false
	}
	if len(finalizers) == 0 {
		finalizers = nil // no empty list in the stored object
	}
	obj.SetFinalizers(finalizers)
	return true
}

func propagationFinalizersWanted(finalizers []string, opts *metav1.DeleteOptions) (orphan, foreground bool) {
	// orphanDependents is deprecated, but kube-apiserver still honours it before the policy.
	if opts.OrphanDependents != nil {
		return *opts.OrphanDependents, false
	}
	if p := opts.PropagationPolicy; p != nil {
		return *p == metav1.DeletePropagationOrphan, *p == metav1.DeletePropagationForeground
	}
	return slices.Contains(finalizers, metav1.FinalizerOrphanDependents), slices.Contains(finalizers, metav1.FinalizerDeleteDependents)
}

func IsPropagationFinalizer(f string) bool {
	return f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents
}

// sameStrings compares as sets.
func sameStrings(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// orphaningStrategy is the strategy of a type whose delete may orphan its dependents when it
// names no propagation policy, as kube's strategy of it says (rest.GarbageCollectionDeleteStrategy
// answering OrphanDependents for the version the request is served in).
type orphaningStrategy interface {
	OrphansByDefault(ctx context.Context) bool
}

// orphansByDefault says whether a delete of req's type that names no propagation policy orphans
// the object's dependents.
func orphansByDefault(ctx context.Context, req *request, opts *metav1.DeleteOptions) bool {
	s, ok := req.res.Strategy.(orphaningStrategy)
	return ok && opts.OrphanDependents == nil && opts.PropagationPolicy == nil && s.OrphansByDefault(ctx)
}
