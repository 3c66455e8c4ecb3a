package builtin

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
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
