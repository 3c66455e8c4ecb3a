package registry

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// setPropagationFinalizers gives obj, which a delete is about to delete or mark as being
// deleted, the garbage collector's finalizers its DeleteOptions ask for, as kube-apiserver's
// store does: orphan for Orphan (or orphanDependents=true), foregroundDeletion for Foreground,
// neither for Background. Without a policy the ones obj has stay, and without those either the
// type's default applies: orphan when orphanByDefault (batch/v1 Jobs), else Background, as
// kube-apiserver's store decides. changed says whether the finalizers differ, so that a
// repeated delete updates them.
func setPropagationFinalizers(obj *unstructured.Unstructured, opts *metav1.DeleteOptions, orphanByDefault bool) (changed bool) {
	current := obj.GetFinalizers()
	orphan, foreground := propagationFinalizersWanted(current, opts, orphanByDefault)
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

func propagationFinalizersWanted(finalizers []string, opts *metav1.DeleteOptions, orphanByDefault bool) (orphan, foreground bool) {
	// orphanDependents is deprecated, but kube-apiserver still honours it before the policy.
	if opts.OrphanDependents != nil {
		return *opts.OrphanDependents, false
	}
	if p := opts.PropagationPolicy; p != nil {
		return *p == metav1.DeletePropagationOrphan, *p == metav1.DeletePropagationForeground
	}
	orphan, foreground = slices.Contains(finalizers, metav1.FinalizerOrphanDependents), slices.Contains(finalizers, metav1.FinalizerDeleteDependents)
	if !orphan && !foreground {
		return orphanByDefault, false
	}
	return orphan, foreground
}

func IsPropagationFinalizer(f string) bool {
	return f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents
}

// sameStrings compares as sets.
func sameStrings(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
