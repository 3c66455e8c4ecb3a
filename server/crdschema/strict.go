package crdschema

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// UnknownFieldErrors words the paths Prune returns as kube-apiserver's decoder does:
// `unknown field "spec.x"`. Under fieldValidation=Warn (the default) each one's Error() is sent
// as a "Warning: 299 - ..." header. Like sigs.k8s.io/json's strict errors, each has a
// FieldPath() method returning its path.
func UnknownFieldErrors(unknownFields []string) []error {
	errs := make([]error, len(unknownFields))
	for i, path := range unknownFields {
		errs[i] = unknownFieldError(path)
	}
	return errs
}

// unknownFieldError is the strict error of an unknown field, named by its path.
type unknownFieldError string

func (e unknownFieldError) Error() string     { return fmt.Sprintf("unknown field %q", string(e)) }
func (e unknownFieldError) FieldPath() string { return string(e) }

// StrictDecodingError is kube-apiserver's 400 BadRequest for a create or update under
// fieldValidation=Strict whose body had strict errors: those sigs.k8s.io/json's UnmarshalStrict
// reported (duplicate fields, `duplicate field "spec.a"`), then the unknown fields from Prune.
// bodyKind and bodyVersion are the kind and version the body declared.
func (s *Schema) StrictDecodingError(bodyKind, bodyVersion string, decodeErrs []error, unknownFields []string) *apierrors.StatusError {
	return s.DecodeError(bodyKind, bodyVersion, strictDecodingError(decodeErrs, unknownFields))
}

// DecodeError is kube-apiserver's 400 BadRequest for a body it could not decode as the type,
// for example an error from Prune.
func (s *Schema) DecodeError(bodyKind, bodyVersion string, err error) *apierrors.StatusError {
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v",
		bodyKind, bodyVersion, s.kind.Kind, err))
}

// StrictPatchError is kube-apiserver's 422 Invalid for a patch under fieldValidation=Strict
// whose result had strict errors: those from decoding the patch (duplicate fields), then the
// unknown fields Prune found in the patched object. patchedJSON is the patched object.
func StrictPatchError(patchedJSON []byte, patchErrs []error, unknownFields []string) *apierrors.StatusError {
	return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{
		field.Invalid(field.NewPath("patch"), string(patchedJSON), strictDecodingError(patchErrs, unknownFields).Error()),
	})
}

func strictDecodingError(decodeErrs []error, unknownFields []string) error {
	all := append(append([]error{}, decodeErrs...), UnknownFieldErrors(unknownFields)...)
	return runtime.NewStrictDecodingError(all)
}
