package crdschema

import (
	"fmt"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
// is not allowed). kube-apiserver defaults after pruning, on writes and on reads from storage,
// by the schema of the object's apiVersion, and objects of another type not at all.
func (s *Schema) Default(u *unstructured.Unstructured) {
	if gv, err := schema.ParseGroupVersion(u.GetAPIVersion()); err == nil && s.isOwnKind(gv, u) {
		structuraldefaulting.Default(u.Object, s.structuralOf(gv.Version))
	}
}

// isOwnKind reports whether u, of group version gv, is of this schema's group and kind (in any
// version).
func (s *Schema) isOwnKind(gv schema.GroupVersion, u *unstructured.Unstructured) bool {
	return gv.Group == s.kind.Group && u.GetKind() == s.kind.Kind
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
// round-tripped through its Go type (which drops unknown metadata fields) and, for an object of
// this type, the rest is pruned against the structural schema, which keeps apiVersion and kind.
func (s *Schema) coerce(u *unstructured.Unstructured, opts coerceOptions) ([]string, error) {
	objectMeta, foundMeta, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{
		DropMalformedFields:     opts.dropInvalidMetadata,
		ReturnUnknownFieldPaths: opts.trackUnknown,
	})
	if err != nil {
		return nil, err
	}
	gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
	if err != nil {
		return nil, err
	}
	// Like kube-apiserver, prune by the schema of the object's version, and leave objects of
	// another type (rejected by Validate) unpruned.
	if s.isOwnKind(gv, u) {
		schemaUnknown, err := s.pruneBySchema(u, s.structuralOf(gv.Version), opts)
		if err != nil {
			return nil, err
		}
		unknown = append(unknown, schemaUnknown...)
		// Objects stored by very old servers may lack a generation.
		if opts.repairGeneration && foundMeta && objectMeta.Generation == 0 {
			objectMeta.Generation = 1
		}
	}
	return unknown, restoreMeta(u, objectMeta, foundMeta)
}

// pruneBySchema drops what the structural schema does not know (everything but apiVersion,
// kind and metadata when there is none), non-nullable nulls without a default, and the unknown
// fields of embedded resources' metadata.
func (s *Schema) pruneBySchema(u *unstructured.Unstructured, structural *structuralschema.Structural, opts coerceOptions) ([]string, error) {
	var unknown []string
	if !s.preserveUnknownFields {
		unknown = structuralpruning.PruneWithOptions(u.Object, structural, true,
			structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: opts.trackUnknown})
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, structural)
	}
	fieldErr, embeddedUnknown := schemaobjectmeta.CoerceWithOptions(nil, u.Object, structural, false, schemaobjectmeta.CoerceOptions{
		DropInvalidFields:       opts.dropInvalidMetadata,
		ReturnUnknownFieldPaths: opts.trackUnknown,
	})
	if fieldErr != nil {
		return nil, fieldErr
	}
	return append(unknown, embeddedUnknown...), nil
}

// restoreMeta puts back the ObjectMeta that was decoded before pruning, which leaves out its
// unknown fields (and, when reading from storage, its malformed ones).
func restoreMeta(u *unstructured.Unstructured, objectMeta *metav1.ObjectMeta, foundMeta bool) error {
	if !foundMeta {
		return nil
	}
	if err := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); err != nil {
		return fmt.Errorf("restoring metadata: %w", err)
	}
	return nil
}
