package pods

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/kubernetes/pkg/registry/core/node"

	"github.com/sqlkube/sqlkube/server/builtin"
)

// storedNode is a kubeletclient.NodeGetter of one node, already read.
type storedNode struct{ node *corev1.Node }

func (n storedNode) Get(context.Context, string, metav1.GetOptions) (*corev1.Node, error) {
	return n.node, nil
}

// nodeProxy answers a request through a node's /proxy as kube-apiserver does when it cannot
// reach the node's kubelet: kube's location of the kubelet (node.ResourceLocation), whose errors
// are kube's (a node without an address, 400 "address not allowed" for one that is not a global
// unicast address such as a loopback one), then the 503 kube's proxy answers when the kubelet
// does not, saying that sqlkube calls no kubelet.
func nodeProxy(ctx context.Context, obj *unstructured.Unstructured, scheme, port string) error {
	var n corev1.Node
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &n); err != nil {
		return apierrors.NewInternalError(err)
	}
	kubelets, err := builtin.KubeletConnections(storedNode{&n})
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if _, _, err := node.ResourceLocation(nil, kubelets, nil, ctx, utilnet.JoinSchemeNamePort(scheme, n.Name, port)); err != nil {
		return err
	}
	return apierrors.NewServiceUnavailable("error trying to reach service: sqlkube does not proxy to kubelets")
}

// serviceProxy answers a request through a Service's /proxy as kube-apiserver does when no
// endpoint backs the Service, which is always so here: nothing runs Pods for an endpoint to
// point at. As there, a port number the request names is looked up in the Service's ports
// first.
func serviceProxy(_ context.Context, obj *unstructured.Unstructured, _, port string) error {
	if number, err := strconv.ParseInt(port, 10, 32); err == nil {
		var svc corev1.Service
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &svc); err != nil {
			return apierrors.NewInternalError(err)
		}
		if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return int64(p.Port) == number }) {
			return apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", number, obj.GetName()))
		}
	}
	return apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", obj.GetName()))
}
