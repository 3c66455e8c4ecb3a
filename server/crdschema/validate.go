package crdschema

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PrepareForCreate sets metadata.generation to 1 and, when the version has a /status
// subresource, drops the status: a create cannot set it.
func (s *Schema) PrepareForCreate(u *unstructured.Unstructured) {
	s.strategy.PrepareForCreate(context.Background(), u)
}

// PrepareForUpdate readies an update of the main resource: with a /status subresource the
// stored status is kept, and metadata.generation is bumped when anything but metadata changed.
func (s *Schema) PrepareForUpdate(u, old *unstructured.Unstructured) {
	s.strategy.PrepareForUpdate(context.Background(), u, old)
}

// PrepareForStatusUpdate readies a write to /status: everything but the status is taken from
// old (metadata.managedFields excepted). u's content is replaced, not merged.
func (s *Schema) PrepareForStatusUpdate(u, old *unstructured.Unstructured) {
	s.statusStrategy.PrepareForUpdate(context.Background(), u, old)
}

// Validate checks an object about to be written to the main resource; old is nil on create.
// It runs, as kube-apiserver does: kind and apiVersion, ObjectMeta, the OpenAPI schema (with
// ratcheting of unchanged invalid values on update), the scale subresource's paths, the
// metadata of embedded resources, list-type invariants and the CEL rules (transition rules
// see old) within kube-apiserver's cost budget. CEL rules are skipped, with a note, when the
// schema errors make them meaningless. The object must already be pruned and defaulted and
// have its name (from generateName) and namespace set.
func (s *Schema) Validate(ctx context.Context, u, old *unstructured.Unstructured) field.ErrorList {
	return validateWith(ctx, s.strategy, u, old)
}

// ValidateStatus checks a write to the /status subresource (old is the stored object): only
// the status is checked against the schema, metadata and the CEL rules as in Validate. Only
// for versions with a /status subresource.
func (s *Schema) ValidateStatus(ctx context.Context, u, old *unstructured.Unstructured) field.ErrorList {
	return validateWith(ctx, s.statusStrategy, u, old)
}

func validateWith(ctx context.Context, st strategy, u, old *unstructured.Unstructured) field.ErrorList {
	if old == nil {
		return st.Validate(ctx, u)
	}
	return st.ValidateUpdate(ctx, u, old)
}

// HasStatus reports whether the version has a /status subresource.
func (s *Schema) HasStatus() bool { return s.hasStatus }

// Warnings returns the warnings kube-apiserver sends for a valid write (about finalizer names
// that are not domain-qualified); old is nil on create. Writes to /status have none.
func (s *Schema) Warnings(u, old *unstructured.Unstructured) []string {
	if old == nil {
		return s.strategy.WarningsOnCreate(context.Background(), u)
	}
	return s.strategy.WarningsOnUpdate(context.Background(), u, old)
}
