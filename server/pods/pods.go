// Package pods serves the Pods' subresources beyond /status, as kube-apiserver's pod storage
// does (k8s.io/kubernetes/pkg/registry/core/pod/storage and rest), on objects read and written
// through the registry: binding (spec.nodeName), eviction (honouring PodDisruptionBudgets as far
// as their stored status allows), and log, exec, attach, portforward and proxy, which answer as
// kube-apiserver does when no kubelet does: sqlkube runs none. It also answers the /proxy of
// nodes and Services, which reach the same nothing. Its handlers are registered with the types
// (resource.Resource.Serve) when New builds it.
package pods

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	kubeletclient "k8s.io/kubernetes/pkg/kubelet/client"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
)

// Resources finds a served resource. *catalog.Catalog implements it.
type Resources interface {
	Lookup(group, version, resource string) (*resource.Resource, bool)
}

// Subresources serves the Pods' subresources through the registry.
type Subresources struct {
	types    Resources
	registry *registry.Registry
	// kubelets is kube-apiserver's lookup of a node's kubelet, on the stored nodes.
	kubelets kubeletclient.ConnectionInfoGetter
}

// New serves the subresources of the pods, nodes and Services types serves (registering its
// handlers with them), read and written through objects.
func New(types Resources, objects *registry.Registry) (*Subresources, error) {
	s := &Subresources{types: types, registry: objects}
	kubelets, err := builtin.KubeletConnections(storedNodes{s})
	if err != nil {
		return nil, err
	}
	s.kubelets = kubelets
	return s, s.register()
}

// ref is the registry's reference to a pod (or, with subresource, to that part of it).
func (s *Subresources) ref(group, resourceName, namespace, name string) (registry.Ref, error) {
	res, ok := s.types.Lookup(group, "v1", resourceName)
	if !ok {
		return registry.Ref{}, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: resourceName}, name)
	}
	return registry.Ref{Resource: res, Namespace: namespace, Name: name}, nil
}

// getPod reads a pod as its versioned Go type.
func (s *Subresources) getPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	ref, err := s.ref("", "pods", namespace, name)
	if err != nil {
		return nil, err
	}
	obj, err := s.getObject(ctx, ref)
	if err != nil {
		return nil, err
	}
	pod := &corev1.Pod{}
	return pod, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, pod)
}

func (s *Subresources) getObject(ctx context.Context, ref registry.Ref) (*unstructured.Unstructured, error) {
	stored, err := s.registry.Get(ctx, ref, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return storedobj.DecodeServed(ref.Resource, stored.Value)
}

// internalPod reads a pod as kube's internal type, which kube's location functions take.
func (s *Subresources) internalPod(ctx context.Context, namespace, name string) (*api.Pod, error) {
	pod, err := s.getPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	internal := &api.Pod{}
	return internal, legacyscheme.Scheme.Convert(pod, internal, nil)
}

// podGetter is kube's pod.ResourceGetter on the registry, in one namespace.
type podGetter struct {
	s         *Subresources
	namespace string
}

func (g podGetter) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	return g.s.internalPod(ctx, g.namespace, name)
}

// storedNodes is the kubelet lookup's NodeGetter on the registry. A node that is not stored is
// NotFound as kube-apiserver's pod storage answers it: the pods resource's NotFound, naming the
// node.
type storedNodes struct{ s *Subresources }

func (n storedNodes) Get(ctx context.Context, name string, _ metav1.GetOptions) (*corev1.Node, error) {
	ref, err := n.s.ref("", "nodes", "", name)
	if err != nil {
		return nil, err
	}
	obj, err := n.s.getObject(ctx, ref)
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
	}
	if err != nil {
		return nil, err
	}
	node := &corev1.Node{}
	return node, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, node)
}

// errNoKubelet is the answer of a subresource that needs the pod's kubelet, at location: 503,
// as kube-apiserver answers when it cannot reach a kubelet, saying why.
func errNoKubelet(location *url.URL) error {
	return unavailable(fmt.Sprintf("no kubelet answers at %s: sqlkube runs no kubelets (it stores pods and runs none)", location.Host))
}

// unavailable is a 503 ServiceUnavailable Status with message.
func unavailable(message string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusServiceUnavailable, Reason: metav1.StatusReasonServiceUnavailable,
		Message: message,
	}}
}

// decodeOptions decodes a subresource's query parameters into the internal options object
// into, as kube-apiserver's parameter codec does.
func decodeOptions(query url.Values, into runtime.Object) error {
	if err := legacyscheme.ParameterCodec.DecodeParameters(query, corev1.SchemeGroupVersion, into); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}
