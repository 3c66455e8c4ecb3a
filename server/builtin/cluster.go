package builtin

import (
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // core's defaults and conversions in legacyscheme.Scheme
	"k8s.io/kubernetes/pkg/registry/core/limitrange"
	"k8s.io/kubernetes/pkg/registry/core/node"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolume"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"
	"k8s.io/kubernetes/pkg/registry/core/resourcequota"
	nodeutil "k8s.io/kubernetes/pkg/util/node"

	"github.com/sqlkube/sqlkube/server/resource"
)

// clusterResources are the core/v1 types of a cluster's nodes and of what they share (volumes,
// their claims, limits and quotas), served with kube-apiserver's own rules (kube), with the
// names and subresources kube's storage of each gives them. Nothing runs them: no kubelet
// reports a node's status, no controller binds a claim or counts a quota's usage, as in envtest.
// With them, the control plane's health as componentstatuses. The effects of kube's
// admission plugins on them (a new node's not-ready taint, the
// storage protection finalizers, the default StorageClass) are the admission chain's.
func clusterResources() []*resource.Resource {
	return []*resource.Resource{
		builtin("", "v1", "nodes", "Node", false, verbsAll, kube[corev1.Node](kubeRules{
			strategy: node.Strategy, status: node.StatusStrategy,
			// core/v1 converts this field label of nodes (and metadata.name).
			fields: map[string][]string{"spec.unschedulable": {"spec", "unschedulable"}},
		}), func(r *resource.Resource) {
			withShortNameAndStatus("no")(r)
			r.Proxy = nodeProxy
		}),
		builtin("", "v1", "persistentvolumes", "PersistentVolume", false, verbsAll, kube[corev1.PersistentVolume](kubeRules{
			strategy: persistentvolume.Strategy, status: persistentvolume.StatusStrategy,
		}), withShortNameAndStatus("pv")),
		builtin("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true, verbsAll, kube[corev1.PersistentVolumeClaim](kubeRules{
			strategy: persistentvolumeclaim.Strategy, status: persistentvolumeclaim.StatusStrategy,
		}), withShortNameAndStatus("pvc")),
		builtin("", "v1", "limitranges", "LimitRange", true, verbsAll, kube[corev1.LimitRange](kubeRules{
			strategy: limitrange.Strategy, table: rest.NewDefaultTableConvertor(corev1.Resource("limitranges")),
		}), func(r *resource.Resource) { r.ShortNames = []string{"limits"} }),
		builtin("", "v1", "resourcequotas", "ResourceQuota", true, verbsAll, kube[corev1.ResourceQuota](kubeRules{
			strategy: resourcequota.Strategy, status: resourcequota.StatusStrategy,
		}), withShortNameAndStatus("quota")),
		componentStatuses(),
	}
}

// withShortNameAndStatus is a type with one short name and /status.
func withShortNameAndStatus(shortName string) func(*resource.Resource) {
	return func(r *resource.Resource) {
		r.ShortNames = []string{shortName}
		r.Status = true
	}
}

// kubeletAddressTypes are the node addresses kube-apiserver reaches a kubelet at, by default
// (--kubelet-preferred-address-types), in its order.
var kubeletAddressTypes = []corev1.NodeAddressType{
	corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeInternalIP, corev1.NodeExternalDNS, corev1.NodeExternalIP,
}

// nodeProxy answers a request through a node's /proxy as kube-apiserver does when it cannot
// reach the node's kubelet: a node whose status reports no address gets kube's own error (a
// 500 with reason Unknown: kube's connection lookup does not make it a Status); any other gets
// the 503 kube's proxy answers when the kubelet does not, saying that sqlkube calls no kubelet.
func nodeProxy(obj *unstructured.Unstructured, _ string) error {
	var node corev1.Node
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &node); err != nil {
		return apierrors.NewInternalError(err)
	}
	if _, err := nodeutil.GetPreferredNodeAddress(&node, kubeletAddressTypes); err != nil {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Reason: metav1.StatusReasonUnknown, Message: err.Error()}}
	}
	return apierrors.NewServiceUnavailable("error trying to reach service: sqlkube does not proxy to kubelets")
}
