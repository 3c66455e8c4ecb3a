package endpoints_test

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestClientGoPatchAndApply drives PATCH through client-go's typed client, as controllers do:
// typed apply configurations, conflicts as errors it recognizes, and patches of each type.
func TestClientGoPatchAndApply(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		client := kubernetes.NewForConfigOrDie(&rest.Config{Host: api.http.URL}).CoreV1().ConfigMaps("default")
		ctx := t.Context()

		config := corev1apply.ConfigMap("c", "default").WithData(map[string]string{"a": "1"})
		applied, err := client.Apply(ctx, config, metav1.ApplyOptions{FieldManager: "controller"})
		if err != nil || applied.Data["a"] != "1" || len(applied.ManagedFields) != 1 || applied.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
			t.Fatalf("apply: %v: %+v", err, applied)
		}

		_, err = client.Apply(ctx, corev1apply.ConfigMap("c", "default").WithData(map[string]string{"a": "2"}), metav1.ApplyOptions{FieldManager: "intruder"})
		if !apierrors.IsConflict(err) {
			t.Fatalf("conflicting apply: %v", err)
		}

		patched, err := client.Patch(ctx, "c", types.StrategicMergePatchType, []byte(`{"data":{"b":"2"}}`), metav1.PatchOptions{FieldManager: "patcher"})
		if err != nil || patched.Data["b"] != "2" {
			t.Fatalf("strategic merge patch: %v: %+v", err, patched)
		}
		patched, err = client.Patch(ctx, "c", types.JSONPatchType, []byte(`[{"op":"remove","path":"/data/b"}]`), metav1.PatchOptions{})
		if err != nil || len(patched.Data) != 1 {
			t.Fatalf("json patch: %v: %+v", err, patched)
		}

		// Extracting what a manager applied gives back its configuration.
		extracted, err := corev1apply.ExtractConfigMap(patched, "controller")
		if err != nil || extracted.Data["a"] != "1" {
			t.Fatalf("extracting the controller's configuration: %v: %+v", err, extracted)
		}
	})
}
