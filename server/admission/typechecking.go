package admission

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	validatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	applyadmissionregistrationv1 "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// typeCheckingManager is who the status of policies is written as, kube's controller's name.
const typeCheckingManager = "validatingadmissionpolicy-status-controller"

// startPolicyTypeChecking keeps each ValidatingAdmissionPolicy's status current until ctx
// ends, as kube-controller-manager's policy status controller does: the library's type checker
// checks its expressions against the OpenAPI schemas of the types it matches (and of its
// paramKind), and its warnings go to status.typeChecking, at the policy's generation.
func (c *Chain) startPolicyTypeChecking(ctx context.Context, client kubernetes.Interface, informers kubeinformers.SharedInformerFactory, mapper meta.RESTMapper) error {
	checker := &validatingpolicy.TypeChecker{SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: client.Discovery()}, RestMapper: mapper}
	policies := informers.Admissionregistration().V1().ValidatingAdmissionPolicies()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	enqueue := func(obj any) {
		if p, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok && p.Status.ObservedGeneration != p.Generation {
			queue.Add(p.Name)
		}
	}
	if _, err := policies.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return err
	}
	context.AfterFunc(ctx, queue.ShutDown)
	go func() {
		for {
			name, shutdown := queue.Get()
			if shutdown {
				return
			}
			err := writeTypeChecking(ctx, client, checker, policies.Lister().Get, name)
			if err != nil && ctx.Err() == nil {
				c.log.Warn("type checking a ValidatingAdmissionPolicy", "name", name, "err", err)
				queue.AddRateLimited(name)
			} else {
				queue.Forget(name)
			}
			queue.Done(name)
		}
	}()
	return nil
}

// writeTypeChecking writes the type checking of the policy named name, unless it is deleted or
// current.
func writeTypeChecking(ctx context.Context, client kubernetes.Interface, checker *validatingpolicy.TypeChecker,
	get func(string) (*admissionregistrationv1.ValidatingAdmissionPolicy, error), name string) error {
	policy, err := get(name)
	if err != nil || policy.Status.ObservedGeneration == policy.Generation {
		return nil // deleted, or done meanwhile
	}
	typeChecking := applyadmissionregistrationv1.TypeChecking()
	for _, w := range checker.Check(policy) {
		typeChecking.WithExpressionWarnings(applyadmissionregistrationv1.ExpressionWarning().WithFieldRef(w.FieldRef).WithWarning(w.Warning))
	}
	status := applyadmissionregistrationv1.ValidatingAdmissionPolicy(name).WithStatus(
		applyadmissionregistrationv1.ValidatingAdmissionPolicyStatus().WithObservedGeneration(policy.Generation).WithTypeChecking(typeChecking))
	_, err = client.AdmissionregistrationV1().ValidatingAdmissionPolicies().ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: typeCheckingManager, Force: true})
	return err
}
