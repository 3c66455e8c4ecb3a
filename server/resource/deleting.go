package resource

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// MarkDeleting sets what kube-apiserver sets on an object whose finalizers keep it from being
// deleted at once: deletionTimestamp (kept if already set), deletionGracePeriodSeconds 0, and, for
// types that track generation, a generation bump, since its controllers must see the change.
func MarkDeleting(obj *unstructured.Unstructured) {
	if obj.GetDeletionTimestamp() == nil {
		if gen := obj.GetGeneration(); gen > 0 {
			obj.SetGeneration(gen + 1)
		}
		now := metav1.NewTime(time.Now().Truncate(time.Second))
		obj.SetDeletionTimestamp(&now)
	}
	obj.SetDeletionGracePeriodSeconds(new(int64))
}
