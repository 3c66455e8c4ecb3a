package builtin

import (
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/resource"
)

// TestClaimGetsKubesDefaults: a new claim's status is what kube-apiserver answers: its
// strategy drops what the client sent, and the defaults kube's storage decoder gives every
// object it reads put the phase back.
func TestClaimGetsKubesDefaults(t *testing.T) {
	res := builtinResource(t, "persistentvolumeclaims")
	obj := decodedForValidation(t, res, `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data, namespace: default},
  spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}, status: {phase: Bound}}`)
	res.Strategy.PrepareForCreate(t.Context(), obj)
	if errs := res.Strategy.Validate(t.Context(), obj); len(errs) != 0 {
		t.Fatalf("a minimal claim is invalid: %s", errorsText(errs))
	}
	if diff := cmp.Diff(map[string]any{"phase": "Pending"}, obj.Object["status"]); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if mode, _, _ := unstructured.NestedString(obj.Object, "spec", "volumeMode"); mode != "Filesystem" {
		t.Errorf("volumeMode %q", mode)
	}
}

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

// TestComponentStatusesOfChecks: one ComponentStatus per liveness check, Healthy while it
// passes.
func TestComponentStatusesOfChecks(t *testing.T) {
	objects := componentStatusesOf([]resource.Check{{Name: "database"}, {Name: "other", Err: errors.New("unreachable")}})
	var got []any
	for _, obj := range objects {
		got = append(got, obj.Object)
	}
	want := []any{
		map[string]any{"apiVersion": "v1", "kind": "ComponentStatus", "metadata": map[string]any{"name": "database"},
			"conditions": []any{map[string]any{"type": "Healthy", "status": "True", "message": "ok"}}},
		map[string]any{"apiVersion": "v1", "kind": "ComponentStatus", "metadata": map[string]any{"name": "other"},
			"conditions": []any{map[string]any{"type": "Healthy", "status": "False", "error": "unreachable"}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("componentstatuses (-want +got):\n%s", diff)
	}
}
