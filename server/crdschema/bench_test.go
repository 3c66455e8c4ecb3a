package crdschema

import (
	"context"
	"testing"
)

// BenchmarkWritePath measures what a create of a typical object costs in this package.
func BenchmarkWritePath(b *testing.B) {
	s := compileWidgets(b)
	src := widget(b, `size: 3, name: abc, port: http, tags: [a, b], ports: [{name: a}, {name: b}], template: {apiVersion: v1, kind: Pod, metadata: {name: p}}, x: 1`)
	ctx := context.Background()
	for b.Loop() {
		u := src.DeepCopy()
		if _, err := s.PruneAndDefault(u); err != nil {
			b.Fatal(err)
		}
		s.PrepareForCreate(u)
		if errs := s.Validate(ctx, u, nil); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	crd := loadCRD(b, "testdata/widgets.yaml")
	for b.Loop() {
		if _, err := Compile(crd, "v1"); err != nil {
			b.Fatal(err)
		}
	}
}
