package pods

import (
	"errors"
	"net/http"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestNodeProxy: a node's /proxy answers kube's error for a kubelet it cannot reach: kube's
// own for a node without an address (500, reason Unknown) and for a loopback one (400 "address
// not allowed", also through a port the request names), 503 for one that sqlkube would have to
// call.
func TestNodeProxy(t *testing.T) {
	node := func(addresses ...any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "n"},
			"status": map[string]any{"addresses": addresses}}}
	}
	address := func(ip string) any { return map[string]any{"type": "InternalIP", "address": ip} }
	for _, c := range []struct {
		node         *unstructured.Unstructured
		scheme, port string
		want         metav1.Status
	}{
		{node(), "", "", metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonUnknown,
			Message: "no preferred addresses found; known addresses: []"}},
		{node(address("127.0.0.1")), "", "", apierrors.NewBadRequest("address not allowed").ErrStatus},
		{node(address("::1")), "https", "10255", apierrors.NewBadRequest("address not allowed").ErrStatus},
		{node(address("10.0.0.1")), "", "", apierrors.NewServiceUnavailable("error trying to reach service: sqlkube does not proxy to kubelets").ErrStatus},
	} {
		var status apierrors.APIStatus
		if err := nodeProxy(t.Context(), c.node, c.scheme, c.port); !errors.As(err, &status) || !reflect.DeepEqual(status.Status(), c.want) {
			t.Errorf("%v: %v, want %+v", c.node.Object["status"], err, c.want)
		}
	}
}
