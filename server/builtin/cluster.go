package builtin

import (
	"context"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/registry/rest"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // core's defaults and conversions in legacyscheme.Scheme
	"k8s.io/kubernetes/pkg/cluster/ports"
	kubeletclient "k8s.io/kubernetes/pkg/kubelet/client"
	"k8s.io/kubernetes/pkg/registry/core/limitrange"
	"k8s.io/kubernetes/pkg/registry/core/node"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolume"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"
	"k8s.io/kubernetes/pkg/registry/core/resourcequota"

	"github.com/sqlkube/sqlkube/server/resource"
)

// clusterResources are the core/v1 types of a cluster's nodes and of what they share (volumes,
// their claims, limits and quotas), served with kube-apiserver's own rules (kube), with the
// names and subresources kube's storage of each gives them. Nothing runs them: no kubelet
// reports a node's status, no controller binds a claim or counts a quota's usage, as in envtest.
// With them, the control plane's health as componentstatuses. The effects of kube's
// admission plugins on them (a new node's not-ready taint, the
// storage protection finalizers, the default StorageClass) are the admission chain's.
func clusterResources(access *Access) []*resource.Resource {
	return []*resource.Resource{
		builtin("", "v1", "nodes", "Node", false, verbsAll, kube[corev1.Node](kubeRules{
			strategy: node.Strategy, status: node.StatusStrategy,
			// core/v1 converts this field label of nodes (and metadata.name).
			fields: map[string][]string{"spec.unschedulable": {"spec", "unschedulable"}},
		}), func(r *resource.Resource) {
			withShortNameAndStatus("no")(r)
			r.Subresources = []resource.Subresource{proxySubresource("Node")}
		}),
		builtin("", "v1", "persistentvolumes", "PersistentVolume", false, verbsAll, kube[corev1.PersistentVolume](kubeRules{
			returnsDeleted: true,
			strategy:       persistentvolume.Strategy, status: persistentvolume.StatusStrategy,
		}), withShortNameAndStatus("pv")),
		builtin("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true, verbsAll, kube[corev1.PersistentVolumeClaim](kubeRules{
			returnsDeleted: true,
			strategy:       persistentvolumeclaim.Strategy, status: persistentvolumeclaim.StatusStrategy,
		}), withShortNameAndStatus("pvc")),
		builtin("", "v1", "limitranges", "LimitRange", true, verbsAll, kube[corev1.LimitRange](kubeRules{
			strategy: limitrange.Strategy, table: rest.NewDefaultTableConvertor(corev1.Resource("limitranges")),
		}), func(r *resource.Resource) { r.ShortNames = []string{"limits"} }),
		builtin("", "v1", "resourcequotas", "ResourceQuota", true, verbsAll, kube[corev1.ResourceQuota](kubeRules{
			returnsDeleted: true,
			strategy:       resourcequota.Strategy, status: resourcequota.StatusStrategy,
		}), withShortNameAndStatus("quota")),
		componentStatuses(access),
	}
}

// withShortNameAndStatus is a type with one short name and /status.
func withShortNameAndStatus(shortName string) func(*resource.Resource) {
	return func(r *resource.Resource) {
		r.ShortNames = []string{shortName}
		r.Status = true
	}
}

// kubeletClientConfig is kube-apiserver's default configuration of its kubelet client where
// it decides which address and port a kubelet is reached at (--kubelet-port,
// --kubelet-preferred-address-types).
var kubeletClientConfig = kubeletclient.KubeletClientConfig{
	Port: ports.KubeletPort,
	PreferredAddressTypes: []string{
		string(corev1.NodeHostName), string(corev1.NodeInternalDNS), string(corev1.NodeInternalIP),
		string(corev1.NodeExternalDNS), string(corev1.NodeExternalIP),
	},
}

// KubeletConnections is kube-apiserver's lookup of the kubelet of a node that nodes reads
// (kubeletclient's, configured as kube-apiserver is by default). A node that reports no
// address is answered as kube's handlers answer the lookup's plain error: a 500 with reason
// Unknown.
func KubeletConnections(nodes kubeletclient.NodeGetter) (kubeletclient.ConnectionInfoGetter, error) {
	getter, err := kubeletclient.NewNodeConnectionInfoGetter(nodes, kubeletClientConfig)
	if err != nil {
		return nil, err
	}
	return statusErrors{getter}, nil
}

type statusErrors struct {
	kubeletclient.ConnectionInfoGetter
}

func (s statusErrors) GetConnectionInfo(ctx context.Context, nodeName types.NodeName) (*kubeletclient.ConnectionInfo, error) {
	info, err := s.ConnectionInfoGetter.GetConnectionInfo(ctx, nodeName)
	if _, isStatus := err.(apierrors.APIStatus); err != nil && !isStatus {
		err = &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Reason: metav1.StatusReasonUnknown, Message: err.Error()}}
	}
	return info, err
}
