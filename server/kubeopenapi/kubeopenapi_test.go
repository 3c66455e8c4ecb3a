package kubeopenapi

import (
	"reflect"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
)

func TestV3SchemasAreKubes(t *testing.T) {
	deployment, configMap := ModelName(reflect.TypeFor[appsv1.Deployment]()), ModelName(reflect.TypeFor[corev1.ConfigMap]())
	if deployment != "io.k8s.api.apps.v1.Deployment" {
		t.Fatalf("Deployment's definition is named %q", deployment)
	}
	schemas, err := builder3.BuildOpenAPIDefinitionsForResources(V3Config("v1.37.2"), deployment, configMap)
	if err != nil {
		t.Fatal(err)
	}
	var gvks []map[string]string
	if err := schemas[deployment].Extensions.GetObject("x-kubernetes-group-version-kind", &gvks); err != nil ||
		!reflect.DeepEqual(gvks, []map[string]string{{"group": "apps", "version": "v1", "kind": "Deployment"}}) {
		t.Errorf("Deployment's group-version-kinds %v (%v)", gvks, err)
	}
	spec := schemas["io.k8s.api.apps.v1.DeploymentSpec"]
	if spec == nil || !slices.Equal(spec.Required, []string{"selector", "template"}) {
		t.Fatalf("DeploymentSpec %+v, want selector and template required", spec)
	}
	if template := spec.Properties["template"]; template.AllOf[0].Ref.String() != "#/components/schemas/io.k8s.api.core.v1.PodTemplateSpec" || template.Description == "" {
		t.Errorf("DeploymentSpec.template: %+v", template)
	}
	if _, listed := spec.Properties["strategy"].Extensions["x-kubernetes-patch-strategy"]; !listed {
		t.Errorf("DeploymentSpec.strategy has no patch strategy: %+v", spec.Properties["strategy"])
	}
	if binary := schemas[configMap].Properties["binaryData"]; binary.AdditionalProperties.Schema.Format != "byte" {
		t.Errorf("ConfigMap.binaryData: %+v", binary)
	}
	if schemas["io.k8s.api.batch.v1.Job"] != nil {
		t.Error("kinds not asked for are in the schemas")
	}
}

func TestV2DefinitionsAreKubes(t *testing.T) {
	swagger, err := builder.BuildOpenAPIDefinitionsForResources(V2Config("v1.37.2"), ModelName(reflect.TypeFor[appsv1.Deployment]()))
	if err != nil {
		t.Fatal(err)
	}
	spec := swagger.Definitions["io.k8s.api.apps.v1.DeploymentSpec"]
	template := spec.Properties["template"]
	if !slices.Equal(spec.Required, []string{"selector", "template"}) || template.Ref.String() != "#/definitions/io.k8s.api.core.v1.PodTemplateSpec" {
		t.Errorf("DeploymentSpec %+v", spec)
	}
}

// TestTypeConverterReadsReviews: every built-in kind converts, the reviews too (client-go's
// apply schemas have none).
func TestTypeConverterReadsReviews(t *testing.T) {
	tc, err := TypeConverter()
	if err != nil {
		t.Fatal(err)
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"},
	}}
	review.TypeMeta = metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SelfSubjectAccessReview"}
	deployment := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}}
	for _, obj := range []runtime.Object{review, deployment} {
		if _, err := tc.ObjectToTyped(obj); err != nil {
			t.Errorf("%T: %v", obj, err)
		}
	}
}
