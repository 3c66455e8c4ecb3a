package crdschema

import (
	"context"
	"reflect"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func assertObject(t *testing.T, got *unstructured.Unstructured, want string) {
	t.Helper()
	if w := object(t, want); !reflect.DeepEqual(got.Object, w.Object) {
		gotYAML, _ := yaml.Marshal(got.Object)
		wantYAML, _ := yaml.Marshal(w.Object)
		t.Errorf("object:\n got %s\nwant %s", gotYAML, wantYAML)
	}
}

func TestPruneAndDefault(t *testing.T) {
	s := compileWidgets(t)
	u := object(t, `{apiVersion: example.com/v1, kind: Widget, extra: 1,
		metadata: {name: w, namespace: default, bogus: 1, labels: {a: b}},
		spec: {size: 1, x: {deep: 1}, note: null, color: null,
			ports: [{name: a, unknown: 2}, {name: b, port: 81}],
			config: {anything: [1, {goes: here}]},
			labels: {k: v},
			template: {apiVersion: v1, kind: Pod, metadata: {name: p, zzz: 1}, spec: {kept: true}}},
		status: {phase: Running, other: x}}`)
	unknown, err := s.PruneAndDefault(u)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"extra", "metadata.bogus", "spec.ports[0].unknown", "spec.template.metadata.zzz", "spec.x", "status.other"}
	slices.Sort(unknown)
	if !slices.Equal(unknown, want) {
		t.Errorf("unknown fields %q, want %q", unknown, want)
	}
	// color: null is not nullable but has a default, so it is defaulted; note is nullable.
	assertObject(t, u, `{apiVersion: example.com/v1, kind: Widget,
		metadata: {name: w, namespace: default, labels: {a: b}},
		spec: {size: 1, note: null, color: red, replicas: 1, minReplicas: 0, nested: {level: 5},
			ports: [{name: a, port: 80}, {name: b, port: 81}],
			config: {anything: [1, {goes: here}]},
			labels: {k: v},
			template: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {kept: true}}},
		status: {phase: Running}}`)
}

func TestDefaultKeepsGivenValues(t *testing.T) {
	s := compileWidgets(t)
	u := widget(t, `size: 1, replicas: 3, color: blue, nested: {level: 0}`)
	s.Default(u)
	assertObject(t, u, `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: default},
		spec: {size: 1, replicas: 3, color: blue, minReplicas: 0, nested: {level: 0}}}`)
}

func TestPruneRejectsMalformedMetadata(t *testing.T) {
	s := compileWidgets(t)
	for name, src := range map[string]string{
		"metadata":          `{apiVersion: example.com/v1, kind: Widget, metadata: oops}`,
		"embedded metadata": `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w}, spec: {size: 1, template: {metadata: [x]}}}`,
		"labels":            `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, labels: {a: 1}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := s.Prune(object(t, src)); err == nil {
				t.Error("no error")
			}
		})
	}
	err := s.DecodeError("Widget", "v1", mustPruneError(t, s, `{apiVersion: example.com/v1, kind: Widget, metadata: oops}`))
	want := `Widget in version "v1" cannot be handled as a Widget: json: cannot unmarshal string into Go value of type v1.ObjectMeta`
	if err.ErrStatus.Code != 400 || err.Error() != want {
		t.Errorf("DecodeError: %d %q, want 400 %q", err.ErrStatus.Code, err.Error(), want)
	}
}

func mustPruneError(t *testing.T, s *Schema, src string) error {
	t.Helper()
	_, err := s.Prune(object(t, src))
	if err == nil {
		t.Fatal("no error")
	}
	return err
}

func TestReadStored(t *testing.T) {
	s := compileWidgets(t)
	// Written under an older schema: a field since removed, a label that no longer decodes,
	// no generation, no defaults.
	u := object(t, `{apiVersion: example.com/v1, kind: Widget,
		metadata: {name: w, namespace: default, labels: {a: 1}},
		spec: {size: 2, removed: true}}`)
	if err := s.ReadStored(u); err != nil {
		t.Fatal(err)
	}
	assertObject(t, u, `{apiVersion: example.com/v1, kind: Widget,
		metadata: {name: w, namespace: default, generation: 1},
		spec: {size: 2, color: red, replicas: 1, minReplicas: 0, nested: {level: 5}}}`)
}

func TestNoPruningWithPreserveUnknownFields(t *testing.T) {
	crd := loadCRD(t, "testdata/widgets.yaml")
	crd.Spec.PreserveUnknownFields = true
	s, err := Compile(crd, "v1")
	if err != nil {
		t.Fatal(err)
	}
	u := widget(t, `size: 1, x: 1`)
	unknown, err := s.PruneAndDefault(u)
	if err != nil || len(unknown) != 0 {
		t.Fatalf("PruneAndDefault: %q, %v", unknown, err)
	}
	if u.Object["spec"].(map[string]any)["x"] != int64(1) {
		t.Error("spec.x was pruned")
	}
}

func TestPruneLeavesOtherTypes(t *testing.T) {
	s := compileWidgets(t)
	u := object(t, `{apiVersion: example.com/v1, kind: Gadget, metadata: {name: g, bogus: 1}, spec: {x: 1}}`)
	unknown, err := s.Prune(u)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(unknown, []string{"metadata.bogus"}) {
		t.Errorf("unknown fields %q", unknown)
	}
	assertObject(t, u, `{apiVersion: example.com/v1, kind: Gadget, metadata: {name: g}, spec: {x: 1}}`)

	if _, err := s.Prune(object(t, `{apiVersion: a/b/c, kind: Widget}`)); err == nil {
		t.Error("no error for apiVersion a/b/c")
	}
}

// Legacy CRDs (from apiextensions/v1beta1) may have no schema, or a non-structural one under
// preserveUnknownFields: their objects are kept as they are and only metadata is checked.
func TestLegacyCRDs(t *testing.T) {
	noSchema := loadCRD(t, "testdata/widgets.yaml")
	noSchema.Spec.PreserveUnknownFields = true
	noSchema.Spec.Versions[0].Schema = nil
	nonStructural := loadCRD(t, "testdata/widgets.yaml")
	nonStructural.Spec.PreserveUnknownFields = true
	// "id" is one of the JSON schema keywords a structural schema cannot hold.
	nonStructural.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["ratio"] = apiextensionsv1.JSONSchemaProps{Type: "number", ID: "ratio"}

	for name, crd := range map[string]*apiextensionsv1.CustomResourceDefinition{"no schema": noSchema, "non-structural": nonStructural} {
		t.Run(name, func(t *testing.T) {
			s, err := Compile(crd, "v1")
			if err != nil {
				t.Fatal(err)
			}
			u := widget(t, `size: 1, x: 1`)
			if unknown, err := s.PruneAndDefault(u); err != nil || len(unknown) != 0 {
				t.Fatalf("PruneAndDefault: %q, %v", unknown, err)
			}
			assertObject(t, u, `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: default}, spec: {size: 1, x: 1}}`)
			s.Validate(context.Background(), u, nil) // must not panic
		})
	}

	nonStructural.Spec.PreserveUnknownFields = false
	if _, err := Compile(nonStructural, "v1"); err == nil {
		t.Error("a non-structural schema compiled without preserveUnknownFields")
	}
}
