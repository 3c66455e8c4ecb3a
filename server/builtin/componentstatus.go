package builtin

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"github.com/sqlkube/sqlkube/server/resource"
)

// componentStatuses are core/v1 componentstatuses, which kube-apiserver computes at each read
// from health checks of the control plane's components (the scheduler, the controller manager,
// each etcd server), with its deprecation warning. sqlkube's components are what its liveness
// checks check, its database: one ComponentStatus per check, named as the check ("database"),
// Healthy with message "ok" while it passes (as kube's etcd check), else not Healthy with the
// check's error. There is no scheduler or controller manager to list. Nothing writes them:
// the type has kube's printer, and a strategy no write reaches (readOnlyStrategy).
func componentStatuses(access *Access) *resource.Resource {
	return builtin("", "v1", "componentstatuses", "ComponentStatus", false, []string{"get", "list"},
		kube[corev1.ComponentStatus](kubeRules{strategy: readOnlyStrategy{legacyscheme.Scheme, names.SimpleNameGenerator}}), func(r *resource.Resource) {
			r.ShortNames = []string{"cs"}
			r.DeprecationWarning = "v1 ComponentStatus is deprecated in v1.19+"
			r.Computed = func(ctx context.Context) []*unstructured.Unstructured {
				return componentStatusesOf(access.liveChecks(ctx))
			}
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

// readOnlyStrategy is the strategy of a cluster-scoped type no write reaches (the server serves
// componentstatuses' get and list only): it prepares and refuses nothing.
type readOnlyStrategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

func (readOnlyStrategy) NamespaceScoped() bool                                            { return false }
func (readOnlyStrategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (readOnlyStrategy) Validate(context.Context, runtime.Object) field.ErrorList         { return nil }
func (readOnlyStrategy) WarningsOnCreate(context.Context, runtime.Object) []string        { return nil }
func (readOnlyStrategy) Canonicalize(runtime.Object)                                      {}
func (readOnlyStrategy) AllowCreateOnUpdate(context.Context) bool                         { return false }
func (readOnlyStrategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}
func (readOnlyStrategy) ValidateUpdate(context.Context, runtime.Object, runtime.Object) field.ErrorList {
	return nil
}
func (readOnlyStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}
func (readOnlyStrategy) AllowUnconditionalUpdate(context.Context) bool { return true }
