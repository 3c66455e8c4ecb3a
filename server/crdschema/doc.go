// Package crdschema gives the server kube-apiserver's semantics for the objects of one served
// version of a CustomResourceDefinition: pruning of unknown fields, defaulting, validation
// (OpenAPI v3 schema, metadata, embedded resources, list types, x-kubernetes-validations CEL
// rules with their cost limits and ratcheting), the /status strategy, selectable fields, printer
// columns and the version's OpenAPI documents.
//
// Everything is delegated to k8s.io/apiextensions-apiserver, wired the way its custom resource
// handler wires it, so that messages, paths and ordering match kube-apiserver exactly.
//
// # How the server uses it
//
// Compile once per served CRD version, when the CRD is registered or changes:
//
//	s, err := crdschema.Compile(crd, "v1")
//
// Request body (create, update, and the result of applying a patch), in this order:
//
//	unknown, err := s.PruneAndDefault(u)  // err: 400, see DecodeError
//	// fieldValidation: Warn (default) → one "unknown field" warning per path;
//	// Strict → StrictDecodingError / StrictPatchError; Ignore → nothing.
//	s.PrepareForCreate(u)                  // or PrepareForUpdate(u, old) / PrepareForStatusUpdate(u, old)
//	// generate the name from generateName, set namespace, uid, timestamps...
//	errs := s.Validate(ctx, u, nil)        // old on update; ValidateStatus for /status
//	// len(errs) > 0 → apierrors.NewInvalid(s.GroupKind(), name, errs) (422)
//	warnings := s.Warnings(u, old)         // finalizer-name warnings, as Warning headers
//
// Object read from storage (also before it serves as "old" on update):
//
//	err := s.ReadStored(u)  // prunes, repairs metadata, applies defaults
//
// Validate includes the type meta (kind, apiVersion) and ObjectMeta checks kube-apiserver runs
// for custom resources, so the caller must not validate metadata a second time.
//
// Lists and watches: FieldSet gives the values of the field selectors the version supports
// (metadata.name, metadata.namespace and spec.versions[].selectableFields). Tables:
// Table converts an object or a list for kubectl get. Discovery documents: OpenAPIV3,
// OpenAPIV2 and MergeOpenAPIV2.
//
// CRD objects themselves are checked by ValidateDefinition.
package crdschema
