package pods

import (
	"context"
	"fmt"
	"maps"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/features"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/registry"
)

// Bind answers POST pods/NAME/binding (pathName NAME) and POST namespaces/NS/bindings (pathName
// the Binding's own name) as kube-apiserver's create handler and BindingREST do: the Binding's
// namespace, if it names one, and its name must be the path's (400), admission admits it, its
// target must be valid (kube answers a 500 with the errors), and the pod, unless being deleted,
// already bound or gated, gets spec.nodeName, the Binding's annotations and labels, and the
// PodScheduled condition, written without the pod strategy. A refusal is 409 Conflict on
// pods/binding; the Binding's uid and resourceVersion are preconditions.
func (s *Subresources) Bind(ctx context.Context, namespace, pathName string, binding *corev1.Binding, dryRun bool) (*metav1.Status, error) {
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(namespace, binding); err != nil {
		return nil, err
	}
	ref, err := s.ref("", "pods", namespace, pathName)
	if err != nil {
		return nil, err
	}
	internal, err := s.admitBinding(ctx, ref, binding, dryRun)
	if err != nil {
		return nil, err
	}
	_, err = s.registry.GuaranteedUpdate(ctx, ref, dryRun, func(obj *unstructured.Unstructured) error {
		if err := checkPreconditions(ref, binding.UID, binding.ResourceVersion, obj); err != nil {
			return err
		}
		return builtin.ChangeInternalPod(obj, func(pod *api.Pod) error { return assign(pod, internal) })
	})
	if err != nil {
		if _, ok := err.(apierrors.APIStatus); !ok {
			err = apierrors.NewConflict(api.Resource("pods/binding"), binding.Name, err)
		}
		return nil, err
	}
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated}, nil
}

// admitBinding runs the admission of binding, a create of ref's pods/binding (PodTopologyLabels
// gives it the node's topology labels), around kube's checks of it; it is what admission made
// of binding, as kube's internal type.
func (s *Subresources) admitBinding(ctx context.Context, ref registry.Ref, binding *corev1.Binding, dryRun bool) (*api.Binding, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(binding)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	obj := &unstructured.Unstructured{Object: content}
	obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Binding"))
	ref.Subresource = "binding"
	internal := &api.Binding{}
	err = s.registry.AdmitCreate(ctx, ref, obj, dryRun, func() error {
		if ref.Name != obj.GetName() {
			return apierrors.NewBadRequest("name in URL does not match name in Binding object")
		}
		*binding = corev1.Binding{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, binding); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		if err := legacyscheme.Scheme.Convert(binding, internal, nil); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		if errs := validation.ValidatePodBinding(internal); len(errs) > 0 {
			return errs.ToAggregate()
		}
		return nil
	})
	return internal, err
}

// assign is kube's BindingREST.setPodNodeAndMetadata on pod.
func assign(pod *api.Pod, binding *api.Binding) error {
	if pod.DeletionTimestamp != nil {
		return fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name)
	}
	if pod.Spec.NodeName != "" {
		return fmt.Errorf("pod %v is already assigned to node %q", pod.Name, pod.Spec.NodeName)
	}
	if len(pod.Spec.SchedulingGates) != 0 {
		return fmt.Errorf("pod %v has non-empty .spec.schedulingGates", pod.Name)
	}
	pod.Spec.NodeName = binding.Target.Name
	if utilfeature.DefaultFeatureGate.Enabled(features.ClearingNominatedNodeNameAfterBinding) {
		pod.Status.NominatedNodeName = ""
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	maps.Copy(pod.Annotations, binding.Annotations)
	podutil.DropInitContainerAnnotations(pod.Annotations)
	if utilfeature.DefaultFeatureGate.Enabled(features.PodTopologyLabelsAdmission) && len(binding.Labels) > 0 {
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		maps.Copy(pod.Labels, binding.Labels)
	}
	podutil.UpdatePodCondition(&pod.Status, &api.PodCondition{Type: api.PodScheduled, Status: api.ConditionTrue})
	return nil
}

// checkPreconditions is kube's storage preconditions on a uid and resourceVersion (either may
// be empty), answered as its store answers them: 409 quoting the storage error.
func checkPreconditions(ref registry.Ref, uid types.UID, resourceVersion string, obj *unstructured.Unstructured) error {
	key := "/registry/pods/" + ref.Namespace + "/" + ref.Name
	if uid != "" && uid != obj.GetUID() {
		return apierrors.NewConflict(ref.Resource.GroupResource(), ref.Name, storage.NewInvalidObjError(key,
			fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, obj.GetUID())))
	}
	if resourceVersion != "" && resourceVersion != obj.GetResourceVersion() {
		return apierrors.NewConflict(ref.Resource.GroupResource(), ref.Name, storage.NewInvalidObjError(key,
			fmt.Sprintf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", resourceVersion, obj.GetResourceVersion())))
	}
	return nil
}
