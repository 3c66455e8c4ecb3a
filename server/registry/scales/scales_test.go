package scales

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/resource"
)

// TestDecodeBody: unknown fields are warnings, ignored, or kube-apiserver's 400 as
// fieldValidation says; a body of another type is that 400 too.
func TestDecodeBody(t *testing.T) {
	body := []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"w"},"spec":{"replicas":3},"extra":1}`)
	scale, warnings, err := DecodeBody(body, "")
	if err != nil || scale.Spec.Replicas != 3 || len(warnings) != 1 || warnings[0] != `unknown field "extra"` {
		t.Errorf("Warn: %+v %q %v", scale, warnings, err)
	}
	if _, warnings, err := DecodeBody(body, metav1.FieldValidationIgnore); err != nil || warnings != nil {
		t.Errorf("Ignore: %q %v", warnings, err)
	}
	if _, _, err := DecodeBody(body, metav1.FieldValidationStrict); !apierrors.IsBadRequest(err) {
		t.Errorf("Strict: %v", err)
	}
	if _, _, err := DecodeBody([]byte(`{"apiVersion":"v1","kind":"ConfigMap"}`), ""); !apierrors.IsBadRequest(err) {
		t.Errorf("a ConfigMap: %v", err)
	}
}

// TestOf reads an object's Scale by its type's paths; a missing spec replicas is 0, not found.
func TestOf(t *testing.T) {
	paths := &resource.ScaleSubresource{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: ".status.selector"}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "w", "namespace": "ns", "resourceVersion": "7"},
		"spec":     map[string]any{"replicas": int64(2)},
		"status":   map[string]any{"replicas": int64(1), "selector": "app=w"},
	}}
	scale, found, err := Of(paths, obj)
	if err != nil || !found || scale.Spec.Replicas != 2 || scale.Status.Replicas != 1 || scale.Status.Selector != "app=w" || scale.Name != "w" || scale.ResourceVersion != "7" {
		t.Errorf("scale %+v, found %t, %v", scale, found, err)
	}
	unstructured.RemoveNestedField(obj.Object, "spec", "replicas")
	if scale, found, err := Of(paths, obj); err != nil || found || scale.Spec.Replicas != 0 {
		t.Errorf("without spec replicas: %+v, found %t, %v", scale, found, err)
	}
	_ = unstructured.SetNestedField(obj.Object, "two", "spec", "replicas")
	if _, _, err := Of(paths, obj); err == nil {
		t.Errorf("replicas of the wrong type read")
	}
}

// TestReplicasPaths maps the versions with /scale to their spec replicas path, others to nil.
func TestReplicasPaths(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
		{Name: "v1", Subresources: &apiextensionsv1.CustomResourceSubresources{Scale: &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.count"}}},
		{Name: "v2"},
	}}}
	paths := ReplicasPaths(&resource.Resource{Definition: crd})
	if p := paths["example.com/v1"]; p == nil || p.String() != ".spec.count" {
		t.Errorf("v1: %v", p)
	}
	if p, ok := paths["example.com/v2"]; !ok || p != nil {
		t.Errorf("v2: %v %t", p, ok)
	}
}

// TestOfStructuredSelector: a built-in's Scale shows its spec.selector in string form, as
// kube-apiserver's scale of deployments does.
func TestOfStructuredSelector(t *testing.T) {
	paths := &resource.ScaleSubresource{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: ".spec.selector", StructuredSelector: true}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "d"},
		"spec": map[string]any{"replicas": int64(3), "selector": map[string]any{
			"matchLabels":      map[string]any{"app": "web"},
			"matchExpressions": []any{map[string]any{"key": "tier", "operator": "In", "values": []any{"a", "b"}}},
		}},
	}}
	scale, _, err := Of(paths, obj)
	if err != nil || scale.Status.Selector != "app=web,tier in (a,b)" || scale.Spec.Replicas != 3 {
		t.Errorf("scale %+v, %v", scale, err)
	}
}

// TestReplicasPathsOfABuiltin: a built-in, served in one version, has its /scale's path.
func TestReplicasPathsOfABuiltin(t *testing.T) {
	res := &resource.Resource{Group: "apps", Version: "v1", Scale: &resource.ScaleSubresource{SpecReplicasPath: ".spec.replicas"}}
	if paths := ReplicasPaths(res); len(paths) != 1 || paths["apps/v1"].String() != ".spec.replicas" {
		t.Errorf("paths %v", paths)
	}
}
