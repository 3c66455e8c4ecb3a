package crdschema

import (
	"fmt"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Prune does to a decoded request body what kube-apiserver's decoder does for custom
// resources: it drops the fields the schema does not know (in metadata too, and in the
// metadata of embedded resources) and non-nullable nulls without a default. It returns the
// dropped paths, for example "spec.x", for the unknown-field warnings and the
// fieldValidation=Strict error. An error means the body cannot be decoded as the type
// (metadata of the wrong shape); kube-apiserver answers it with 400, see DecodeError.
func (s *Schema) Prune(u *unstructured.Unstructured) (unknownFields []string, err error) {
	return s.coerce(u, coerceOptions{trackUnknown: true})
}

// Default sets the schema's default values on the fields that are missing (or null where null
// is not allowed). kube-apiserver defaults after pruning, on writes and on reads from storage.
func (s *Schema) Default(u *unstructured.Unstructured) {
	structuraldefaulting.Default(u.Object, s.structural)
}

// PruneAndDefault is Prune then Default: what decoding a request body does in kube-apiserver.
func (s *Schema) PruneAndDefault(u *unstructured.Unstructured) (unknownFields []string, err error) {
	unknownFields, err = s.Prune(u)
	if err != nil {
		return nil, err
	}
	s.Default(u)
	return unknownFields, nil
}

// ReadStored prepares an object read from storage the way kube-apiserver's storage decoder
// does: pruning (for a schema that changed since the write), dropping metadata fields that
// fail to decode, setting a missing metadata.generation to 1, then defaulting.
func (s *Schema) ReadStored(u *unstructured.Unstructured) error {
	if _, err := s.coerce(u, coerceOptions{dropInvalidMetadata: true, repairGeneration: true}); err != nil {
		return err
	}
	s.Default(u)
	return nil
}

type coerceOptions struct {
	trackUnknown        bool
	dropInvalidMetadata bool
	repairGeneration    bool
}

// coerce prunes and normalizes metadata as kube-apiserver's schema coercer does: ObjectMeta is
// round-tripped through its Go type (which drops unknown metadata fields) and the rest is pruned
// against the structural schema. apiVersion and kind are kept as they were.
func (s *Schema) coerce(u *unstructured.Unstructured, opts coerceOptions) ([]string, error) {
	apiVersion, kind := u.GetAPIVersion(), u.GetKind()
	objectMeta, foundMeta, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{
		DropMalformedFields:     opts.dropInvalidMetadata,
		ReturnUnknownFieldPaths: opts.trackUnknown,
	})
	if err != nil {
		return nil, err
	}
	if s.structural != nil && !s.preserveUnknownFields {
		unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, s.structural, true,
			structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: opts.trackUnknown})...)
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, s.structural)
	}
	if s.structural != nil {
		fieldErr, embeddedUnknown := schemaobjectmeta.CoerceWithOptions(nil, u.Object, s.structural, false, schemaobjectmeta.CoerceOptions{
			DropInvalidFields:       opts.dropInvalidMetadata,
			ReturnUnknownFieldPaths: opts.trackUnknown,
		})
		if fieldErr != nil {
			return nil, fieldErr
		}
		unknown = append(unknown, embeddedUnknown...)
	}
	if opts.repairGeneration && foundMeta && objectMeta.Generation == 0 {
		objectMeta.Generation = 1
	}
	return unknown, restoreMeta(u, apiVersion, kind, objectMeta, foundMeta)
}

// restoreMeta puts back the type and object metadata the coercion set aside, starting clean.
func restoreMeta(u *unstructured.Unstructured, apiVersion, kind string, objectMeta *metav1.ObjectMeta, foundMeta bool) error {
	if kind != "" {
		u.SetKind(kind)
	}
	if apiVersion != "" {
		u.SetAPIVersion(apiVersion)
	}
	if !foundMeta {
		return nil
	}
	if err := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); err != nil {
		return fmt.Errorf("restoring metadata: %w", err)
	}
	return nil
}
