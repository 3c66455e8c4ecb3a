// Package priorityclasses writes the two system PriorityClasses (system-node-critical and
// system-cluster-critical) at start, as kube-apiserver's scheduling post-start hook does:
// each is created if missing, and left alone if it exists.
package priorityclasses

import (
	"context"
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	schedulingapiv1 "k8s.io/kubernetes/pkg/apis/scheduling/v1"

	"github.com/sqlkube/sqlkube/server/controllers"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/resource"
)

// fieldManager is who the classes are written as: kube-apiserver's hook writes them through its
// loopback client, whose user agent names it.
const fieldManager = "kube-apiserver"

// retry is how long Run waits before trying again after a failed write.
const retry = time.Second

// Run creates the system PriorityClasses that do not exist through priorityClasses, trying again
// until every one exists or ctx ends.
func Run(ctx context.Context, deps controllers.Deps, priorityClasses *resource.Resource) {
	_ = wait.PollUntilContextCancel(ctx, retry, true, func(ctx context.Context) (bool, error) {
		for _, pc := range schedulingapiv1.SystemPriorityClasses() {
			if err := ensure(ctx, deps, priorityClasses, pc); err != nil {
				deps.Log.Warn("writing a system priority class", "name", pc.Name, "err", err)
				return false, nil
			}
		}
		return true, nil
	})
}

// ensure creates want unless a PriorityClass of its name exists.
func ensure(ctx context.Context, deps controllers.Deps, priorityClasses *resource.Resource, want *schedulingv1.PriorityClass) error {
	ref := registry.Ref{Resource: priorityClasses, Name: want.Name}
	_, err := deps.Registry.Get(ctx, ref, &metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	legacyscheme.Scheme.Default(want) // as decoding the hook's request defaults it
	obj, err := controllers.ToUnstructured(want, priorityClasses)
	if err != nil {
		return err
	}
	_, _, err = deps.Registry.Create(ctx, ref, obj, &metav1.CreateOptions{FieldManager: fieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
