package crdschema

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

func TestStrictErrors(t *testing.T) {
	s := compileWidgets(t)
	unknown := []string{"spec.x", "spec.y"}

	var warnings []string
	for _, err := range UnknownFieldErrors(unknown) {
		warnings = append(warnings, err.Error())
	}
	if want := []string{`unknown field "spec.x"`, `unknown field "spec.y"`}; !slices.Equal(warnings, want) {
		t.Errorf("warnings %q, want %q", warnings, want)
	}

	err := s.StrictDecodingError("Widget", "v1", []error{errors.New(`duplicate field "spec.size"`)}, unknown)
	want := `Widget in version "v1" cannot be handled as a Widget: strict decoding error: duplicate field "spec.size", unknown field "spec.x", unknown field "spec.y"`
	if err.ErrStatus.Code != 400 || err.ErrStatus.Reason != metav1.StatusReasonBadRequest || err.Error() != want {
		t.Errorf("StrictDecodingError: %d %s %q\nwant 400 BadRequest %q", err.ErrStatus.Code, err.ErrStatus.Reason, err.Error(), want)
	}

	err = StrictPatchError([]byte(`{"spec":{"x":1}}`), nil, []string{"spec.x"})
	want = `: Invalid value: "{\"spec\":{\"x\":1}}": strict decoding error: unknown field "spec.x"`
	if err.ErrStatus.Code != 422 || len(err.ErrStatus.Details.Causes) != 1 || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("StrictPatchError: %d %q, want 422 ending in %q", err.ErrStatus.Code, err.Error(), want)
	}
	if cause := err.ErrStatus.Details.Causes[0]; cause.Field != "patch" {
		t.Errorf("cause field %q, want patch", cause.Field)
	}
}

func TestSelectableFields(t *testing.T) {
	s := compileWidgets(t)
	if got, want := s.SelectableFields(), []string{"metadata.name", "metadata.namespace", "spec.color", "spec.size"}; !slices.Equal(got, want) {
		t.Errorf("SelectableFields() = %q, want %q", got, want)
	}
	if err := s.CheckFieldLabel("spec.color"); err != nil {
		t.Error(err)
	}
	if err := s.CheckFieldLabel("spec.name"); err == nil || err.Error() != "field label not supported: spec.name" {
		t.Errorf("CheckFieldLabel(spec.name) = %v", err)
	}

	set, err := s.FieldSet(widget(t, `size: 3`))
	if err != nil {
		t.Fatal(err)
	}
	want := fields.Set{"metadata.name": "w", "metadata.namespace": "default", "spec.size": "3", "spec.color": ""}
	if !maps.Equal(set, want) {
		t.Errorf("FieldSet = %v, want %v", set, want)
	}
	if !fields.SelectorFromSet(fields.Set{"spec.size": "3"}).Matches(set) {
		t.Error("spec.size=3 does not match")
	}
}

func TestTable(t *testing.T) {
	s := compileWidgets(t)
	u := widget(t, `size: 3, color: green, replicas: 2`)
	list := &unstructured.UnstructuredList{Items: []unstructured.Unstructured{*u}}
	list.SetResourceVersion("42")
	table, err := s.Table(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name+":"+c.Type)
	}
	if want := []string{"Name:string", "Color:string", "Replicas:integer", "Missing:string"}; !slices.Equal(names, want) {
		t.Errorf("columns %q, want %q", names, want)
	}
	if table.ResourceVersion != "42" || len(table.Rows) != 1 {
		t.Fatalf("table %+v", table)
	}
	if cells, want := table.Rows[0].Cells, []any{"w", "green", int64(2), nil}; !slices.Equal(cells, want) {
		t.Errorf("cells %#v, want %#v", cells, want)
	}

	table, err = s.Table(context.Background(), u, &metav1.TableOptions{NoHeaders: true})
	if err != nil || table.ColumnDefinitions != nil || len(table.Rows) != 1 {
		t.Errorf("NoHeaders table %+v, %v", table, err)
	}
}

func TestTableDefaultsToAge(t *testing.T) {
	s, err := Compile(loadCRD(t, "testdata/costly.yaml"), "v1")
	if err != nil {
		t.Fatal(err)
	}
	table, err := s.Table(context.Background(), object(t, `{apiVersion: example.com/v1, kind: List, metadata: {name: l, creationTimestamp: "2024-01-02T03:04:05Z"}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(table.ColumnDefinitions); n != 2 || table.ColumnDefinitions[1].Name != "Age" || table.ColumnDefinitions[1].Type != "date" {
		t.Errorf("columns %+v", table.ColumnDefinitions)
	}
	created := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	if cell := table.Rows[0].Cells[1]; cell != duration.HumanDuration(time.Since(created)) {
		t.Errorf("Age cell %#v", cell)
	}
}

func TestOpenAPI(t *testing.T) {
	crd := loadCRD(t, "testdata/widgets.yaml")
	v3, err := OpenAPIV3(crd, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v3.Paths.Paths["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status"]; !ok {
		t.Error("no status path in the v3 document")
	}
	widget, ok := v3.Components.Schemas["com.example.v1.Widget"]
	if !ok {
		t.Fatal("no com.example.v1.Widget schema")
	}
	if size := widget.Properties["spec"].Properties["size"]; size.Maximum == nil || *size.Maximum != 10 {
		t.Errorf("spec.size schema %+v", size)
	}
	lists, err := OpenAPIV3(loadCRD(t, "testdata/costly.yaml"), "v1")
	if err != nil {
		t.Fatal(err)
	}
	merged, err := MergeOpenAPIV3(v3, lists)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := merged.Paths.Paths["/apis/example.com/v1/lists"]; !ok {
		t.Error("the merged v3 document misses the second CRD's path")
	}

	v2, err := OpenAPIV2(crd)
	if err != nil {
		t.Fatal(err)
	}
	def, ok := v2.Definitions["com.example.v1.Widget"]
	if !ok {
		t.Fatal("no com.example.v1.Widget definition")
	}
	if def.Properties["spec"].Properties["color"].Default != nil {
		t.Error("v2 definitions keep defaults")
	}
	merged2, err := MergeOpenAPIV2(&spec.Swagger{}, v2)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := merged2.Paths.Paths["/apis/example.com/v1/namespaces/{namespace}/widgets"]; !ok {
		t.Error("the merged v2 document misses the CRD's path")
	}
}

func TestValidateDefinition(t *testing.T) {
	valid := loadCRD(t, "testdata/widgets.yaml")
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(valid)
	if err := PrepareDefinition(valid, nil); err != nil {
		t.Fatal(err)
	}
	if valid.Generation != 1 || !slices.Equal(valid.Status.StoredVersions, []string{"v1"}) || valid.Kind != "CustomResourceDefinition" {
		t.Errorf("prepared CRD: generation %d, storedVersions %q, kind %q", valid.Generation, valid.Status.StoredVersions, valid.Kind)
	}
	if errs, _ := ValidateDefinition(context.Background(), valid, nil); len(errs) != 0 {
		t.Errorf("valid CRD: %v", errs)
	}

	// A single version's schema is reported under spec.validation, as kube-apiserver does.
	tests := []struct {
		name     string
		modify   func(*apiextensionsv1.JSONSchemaProps)
		field    string
		contains string
	}{
		{name: "non-structural", modify: func(s *apiextensionsv1.JSONSchemaProps) {
			s.Properties["spec"].Properties["ratio"] = apiextensionsv1.JSONSchemaProps{Maximum: ptr(1.0)}
		}, field: "spec.validation.openAPIV3Schema.properties[spec].properties[ratio].type",
			contains: "Required value: must not be empty for specified object fields"},
		{name: "bad CEL", modify: func(s *apiextensionsv1.JSONSchemaProps) {
			s.Properties["spec"].XValidations[0].Rule = "self.minReplicas <="
		}, field: "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule",
			contains: "compilation failed: ERROR: <input>:1:20: Syntax error: mismatched input '<EOF>'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd := valid.DeepCopy()
			tt.modify(crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
			errs, _ := ValidateDefinition(context.Background(), crd, nil)
			if len(errs) != 1 || errs[0].Field != tt.field || !strings.Contains(errs[0].ErrorBody(), tt.contains) {
				t.Errorf("errors %q, want one at %s containing %q", messages(errs), tt.field, tt.contains)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestValidateDefinitionUpdateAndWarnings(t *testing.T) {
	old := loadCRD(t, "testdata/widgets.yaml")
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(old)
	if err := PrepareDefinition(old, nil); err != nil {
		t.Fatal(err)
	}
	old.ResourceVersion = "3"
	crd := old.DeepCopy()
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["name"] = apiextensionsv1.JSONSchemaProps{Type: "string", Format: "colour"}
	if err := PrepareDefinition(crd, old); err != nil {
		t.Fatal(err)
	}
	if crd.Generation != 2 {
		t.Errorf("generation %d after a spec change, want 2", crd.Generation)
	}
	errs, warnings := ValidateDefinition(context.Background(), crd, old)
	if len(errs) != 0 || !slices.Equal(warnings, []string{`unrecognized format "colour"`}) {
		t.Errorf("errors %q, warnings %q", messages(errs), warnings)
	}

	crd.Spec.Names.Plural = "gadgets"
	errs, _ = ValidateDefinition(context.Background(), crd, old)
	assertMessages(t, errs, `spec.names.plural: Invalid value: "gadgets": field is immutable`)
}
