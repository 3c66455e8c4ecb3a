package auth

import (
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	kubeinformers "k8s.io/client-go/informers"
	certificatesinformers "k8s.io/client-go/informers/certificates/v1"
	resourceinformers "k8s.io/client-go/informers/resource/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/auth/nodeidentifier"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/node"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"
)

// NewNodeAuthorizer is kube's Node authorizer (--authorization-mode=Node), built as
// kube-apiserver builds it: a kubelet (user system:node:NAME in group system:nodes) may write its
// own Node and Lease and read what the pods bound to its node use (their Secrets, ConfigMaps,
// volumes, ServiceAccount tokens...), and nothing of other nodes; on other users it has no
// opinion. It decides from a graph of nodes, pods, volumes and what they reference, which follows
// informers (start them; synced tells when the graph holds what is stored).
func NewNodeAuthorizer(informers kubeinformers.SharedInformerFactory) (authz RuleAuthorizer, synced func() bool) {
	var slices resourceinformers.ResourceSliceInformer
	if utilfeature.DefaultFeatureGate.Enabled(features.DynamicResourceAllocation) {
		slices = informers.Resource().V1().ResourceSlices()
	}
	var podCertificateRequests certificatesinformers.PodCertificateRequestInformer
	if utilfeature.DefaultFeatureGate.Enabled(features.PodCertificateRequest) {
		podCertificateRequests = informers.Certificates().V1().PodCertificateRequests()
	}
	node.RegisterMetrics()
	graph := node.NewGraph()
	pods, volumes, attachments := informers.Core().V1().Pods(), informers.Core().V1().PersistentVolumes(), informers.Storage().V1().VolumeAttachments()
	node.AddGraphEventHandlers(graph, informers.Core().V1().Nodes(), pods, volumes, attachments, slices, podCertificateRequests)
	// The graph follows these (not the nodes: asking for an informer the factory has not been
	// asked for before it started would make one that never starts).
	followed := []cache.SharedIndexInformer{pods.Informer(), volumes.Informer(), attachments.Informer()}
	if slices != nil {
		followed = append(followed, slices.Informer())
	}
	if podCertificateRequests != nil {
		followed = append(followed, podCertificateRequests.Informer())
	}
	synced = func() bool {
		for _, informer := range followed {
			if !informer.HasSynced() {
				return false
			}
		}
		return true
	}
	return node.NewAuthorizer(graph, nodeidentifier.NewDefaultNodeIdentifier(), bootstrappolicy.NodeRules()), synced
}
