package crdschema

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// FuzzValidate feeds arbitrary JSON bodies through the whole write path, as a create, as an
// update of a valid object and of itself, and as a /status write: nothing may panic.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"d"},"spec":{"size":1}}`,
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":"x","ports":[{"name":1},null],"tags":[[],{}]}}`,
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"labels":{"a":null}},"spec":{"template":{"metadata":{"name":[]}}},"status":[]}`,
		`{"apiVersion":1,"kind":null,"metadata":null,"spec":null,"status":{"phase":"Running","replicas":"x"}}`,
		`{"spec":{"nested":null,"labels":{"a":1,"b":null},"minReplicas":9223372036854775807,"replicas":-9223372036854775808}}`,
	} {
		f.Add([]byte(seed))
	}
	s := compileWidgets(f)
	valid := widget(f, `size: 2`)
	valid.SetResourceVersion("1")
	if err := s.ReadStored(valid); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		u := &unstructured.Unstructured{}
		if utiljson.Unmarshal(body, &u.Object) != nil || u.Object == nil {
			return
		}
		ctx := context.Background()
		self := u.DeepCopy()
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
