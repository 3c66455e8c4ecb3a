package builtin

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sqlkube/sqlkube/server/resource"
)

// componentStatuses are core/v1 componentstatuses, which kube-apiserver computes at each read
// from health checks of the control plane's components (the scheduler, the controller manager,
// each etcd server), with its deprecation warning. sqlkube's components are what its liveness
// checks check, its database: one ComponentStatus per check, named as the check ("database"),
// Healthy with message "ok" while it passes (as kube's etcd check), else not Healthy with the
// check's error. There is no scheduler or controller manager to list. Nothing writes them:
// the type has kube's printer, and no strategy for writes (the kube adapter's is nil).
func componentStatuses() *resource.Resource {
	return builtin("", "v1", "componentstatuses", "ComponentStatus", false, []string{"get", "list"},
		kube[corev1.ComponentStatus](kubeRules{}), func(r *resource.Resource) {
			r.ShortNames = []string{"cs"}
			r.DeprecationWarning = "v1 ComponentStatus is deprecated in v1.19+"
			r.Computed = componentStatusesOf
		})
}

// componentStatusesOf are the ComponentStatuses of the server's liveness checks.
func componentStatusesOf(checks []resource.Check) []*unstructured.Unstructured {
	objects := make([]*unstructured.Unstructured, 0, len(checks))
	for _, check := range checks {
		condition := corev1.ComponentCondition{Type: corev1.ComponentHealthy, Status: corev1.ConditionTrue, Message: "ok"}
		if check.Err != nil {
			condition = corev1.ComponentCondition{Type: corev1.ComponentHealthy, Status: corev1.ConditionFalse, Error: check.Err.Error()}
		}
		status := &corev1.ComponentStatus{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ComponentStatus"},
			ObjectMeta: metav1.ObjectMeta{Name: check.Name},
			Conditions: []corev1.ComponentCondition{condition},
		}
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
		if err != nil {
			continue // cannot happen: the type converts
		}
		objects = append(objects, &unstructured.Unstructured{Object: content})
	}
	return objects
}
