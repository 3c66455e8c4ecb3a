// Package crdschema gives the server kube-apiserver's semantics for the objects of one served
// version of a CustomResourceDefinition: pruning of unknown fields, defaulting, validation
// (OpenAPI v3 schema, type and object metadata, embedded resources, list types,
// x-kubernetes-validations CEL rules with their cost limits, ratcheting on update), the
// /status strategy, selectable fields, printer columns and the version's OpenAPI documents;
// and, for CRD objects themselves, kube-apiserver's preparation and validation.
//
// Everything is delegated to k8s.io/apiextensions-apiserver, wired the way its custom resource
// handler wires it, so that messages, field paths and ordering match kube-apiserver's.
//
// # Writing a CRD
//
//	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd) // as decoding does
//	err := crdschema.PrepareDefinition(crd, old)                    // old nil on create
//	errs, warnings := crdschema.ValidateDefinition(ctx, crd, old)   // errs → 422 Invalid
//
// # Serving a CRD version
//
// Compile once per served version, when the CRD is registered or changes:
//
//	s, err := crdschema.Compile(crd, "v1")
//
// Objects are *unstructured.Unstructured whose whole numbers are int64, as
// k8s.io/apimachinery/pkg/util/json and unstructured.UnstructuredJSONScheme decode them
// (float64 integers break CEL and the scale checks).
//
// A request body (create, update, /status, and the object a patch produced), in this order:
//
//	unknown, err := s.PruneAndDefault(u)
//	// err → s.DecodeError(kind, version, err) (400)
//	// fieldValidation Warn (default): one warning per UnknownFieldErrors(unknown);
//	// Strict: s.StrictDecodingError (create/update, 400) or StrictPatchError (patch, 422);
//	// Ignore: nothing.
//	// Create: name from generateName, namespace, uid, creationTimestamp...; then
//	s.PrepareForCreate(u)
//	// Update: first what rest.BeforeUpdate does for every type (generation, uid,
//	// creationTimestamp, deletion fields copied from old); then
//	s.PrepareForUpdate(u, old)        // or s.PrepareForStatusUpdate(u, old) for /status
//	errs := s.Validate(ctx, u, old)   // old nil on create; s.ValidateStatus for /status
//	// errs → apierrors.NewInvalid(s.GroupKind(), name, errs) (422)
//	warnings := s.Warnings(u, old)    // main resource only
//
// Validate includes the type meta (kind, apiVersion) and ObjectMeta checks kube-apiserver runs
// for custom resources (including "resourceVersion must be specified for an update"), so the
// caller must not validate metadata a second time.
//
// An object read from storage, before it is served or used as old:
//
//	err := s.ReadStored(u) // prunes, drops undecodable metadata, repairs generation, defaults
//
// Lists and watches: CheckFieldLabel rejects unsupported field selectors (400) and FieldSet
// gives an object's values to match them against. kubectl get: Table. Discovery documents:
// OpenAPIV3 and MergeOpenAPIV3 for /openapi/v3/apis/GROUP/VERSION, OpenAPIV2 and
// MergeOpenAPIV2 for /openapi/v2.
package crdschema
