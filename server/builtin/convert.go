package builtin

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// ChangeAs applies change to obj as the built-in's versioned Go type V (policyv1.PodDisruptionBudget)
// and writes the result back; obj keeps its apiVersion and kind. An error of change, or of the
// conversions, leaves obj as it was.
func ChangeAs[V any](obj *unstructured.Unstructured, change func(*V) error) error {
	versioned := new(V)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, versioned); err != nil {
		return err
	}
	if err := change(versioned); err != nil {
		return err
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(versioned)
	if err != nil {
		return err
	}
	content["apiVersion"], content["kind"] = obj.GetAPIVersion(), obj.GetKind()
	obj.Object = content
	return nil
}

// ChangeInternalPod applies change to obj, a Pod, as kube's internal Pod (which kube's pod
// helpers and admission plugins take), and writes the result back.
func ChangeInternalPod(obj *unstructured.Unstructured, change func(*api.Pod) error) error {
	return ChangeAs(obj, func(pod *corev1.Pod) error {
		internal := &api.Pod{}
		if err := legacyscheme.Scheme.Convert(pod, internal, nil); err != nil {
			return err
		}
		if err := change(internal); err != nil {
			return err
		}
		*pod = corev1.Pod{}
		return legacyscheme.Scheme.Convert(internal, pod, nil)
	})
}
