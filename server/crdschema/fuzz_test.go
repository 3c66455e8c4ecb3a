package crdschema

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// FuzzValidate feeds Widgets with arbitrary metadata, spec and status (each any JSON value,
// left out when it does not parse) through the whole write path: as a create, as an update of
// a valid object and of itself, and as a /status write. Nothing may panic.
func FuzzValidate(f *testing.F) {
	for _, seed := range [][3]string{
		{`{"name":"w","namespace":"d"}`, `{"size":1}`, `{}`},
		{`{"name":"w"}`, `{"size":"x","ports":[{"name":1},null],"tags":[[],{}]}`, `[]`},
		{`{"labels":{"a":null}}`, `{"template":{"metadata":{"name":[]}}}`, `{"phase":"Running","replicas":"x"}`},
		{`null`, `null`, `{"phase":"Running","replicas":0}`},
		{`{"generation":-1}`, `{"nested":null,"labels":{"a":1,"b":null},"minReplicas":9223372036854775807,"replicas":-9223372036854775808}`, `1`},
		{`{"name":"w","finalizers":["x",1]}`, `{"size":1,"template":{"apiVersion":"v1","kind":"a.b","metadata":{"name":"a/b","labels":[]}}}`, `"s"`},
	} {
		f.Add([]byte(seed[0]), []byte(seed[1]), []byte(seed[2]))
	}
	s := compileWidgets(f)
	valid := widget(f, `size: 2`)
	valid.SetResourceVersion("1")
	if err := s.ReadStored(valid); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, metadata, spec, status []byte) {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget"}}
		setJSON(u, "metadata", metadata)
		setJSON(u, "spec", spec)
		setJSON(u, "status", status)
		self := u.DeepCopy()
		ctx := context.Background()
		if _, err := s.PruneAndDefault(u); err != nil {
			return
		}
		s.PrepareForCreate(u.DeepCopy())
		s.Validate(ctx, u, nil)
		s.Validate(ctx, u, valid)
		s.Warnings(u, valid)
		s.FieldSet(u)
		s.Table(ctx, u, nil)

		if s.ReadStored(self) == nil {
			s.Validate(ctx, u, self)
			s.PrepareForStatusUpdate(u, self)
			s.ValidateStatus(ctx, u, self)
		}
	})
}

// setJSON sets u's field to the JSON value data, if it parses.
func setJSON(u *unstructured.Unstructured, field string, data []byte) {
	var v any
	if utiljson.Unmarshal(data, &v) == nil {
		u.Object[field] = v
	}
}
