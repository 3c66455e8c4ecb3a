package crdschema

import (
	"os"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

func loadCRD(t testing.TB, file string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

func compileWidgets(t testing.TB) *Schema {
	t.Helper()
	s, err := Compile(loadCRD(t, "testdata/widgets.yaml"), "v1")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// object parses a YAML or JSON object the way the server decodes bodies: whole numbers become
// int64, as CEL and the schema validators expect.
func object(t testing.TB, src string) *unstructured.Unstructured {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal(data, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// widget is a valid Widget with spec given as YAML flow mapping content.
func widget(t testing.TB, spec string) *unstructured.Unstructured {
	t.Helper()
	return object(t, `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: default}, spec: {`+spec+`}}`)
}
