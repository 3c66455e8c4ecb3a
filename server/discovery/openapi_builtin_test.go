package discovery

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/sqlkube/sqlkube/server/builtin"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestBuiltinOpenAPISchemas(t *testing.T) {
	defs := openAPISchemas{}
	defs.addKind(reflect.TypeFor[corev1.ConfigMap](), "", "v1", "ConfigMap")
	cm := defs["io.k8s.api.core.v1.ConfigMap"]
	if cm == nil {
		t.Fatalf("no ConfigMap definition among %v", slices.Collect(maps.Keys(defs)))
	}
	var gvks []map[string]string
	if err := cm.Extensions.GetObject("x-kubernetes-group-version-kind", &gvks); err != nil || !reflect.DeepEqual(gvks, []map[string]string{{"group": "", "version": "v1", "kind": "ConfigMap"}}) {
		t.Errorf("group-version-kind %v (%v)", gvks, err)
	}
	if data := cm.Properties["data"]; !data.Type.Contains("object") || !data.AdditionalProperties.Schema.Type.Contains("string") || data.Description == "" {
		t.Errorf("data: %+v", data)
	}
	if binary := cm.Properties["binaryData"]; binary.AdditionalProperties.Schema.Format != "byte" {
		t.Errorf("binaryData: %+v", binary)
	}
	if meta := cm.Properties["metadata"]; meta.AllOf[0].Ref.String() != "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" {
		t.Errorf("metadata: %+v", meta)
	}
	if _, inlined := cm.Properties["kind"]; !inlined {
		t.Error("TypeMeta's fields are not inlined")
	}
	if created := defs["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].Properties["creationTimestamp"]; created.Format != "date-time" {
		t.Errorf("creationTimestamp: %+v", created)
	}

	defs.addKind(reflect.TypeFor[apiextensionsv1.CustomResourceDefinition](), builtin.APIExtensionsGroup, "v1", "CustomResourceDefinition")
	if defs["io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"] == nil {
		t.Error("the recursive JSONSchemaProps has no definition")
	}
}
