package crdschema

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Schema holds everything compiled from one version of a CRD. It is safe for concurrent use.
type Schema struct {
	kind            schema.GroupVersionKind
	namespaced      bool
	hasStatus       bool
	selectableNames []string
	// structural is nil when the version has no schema, or one that is not structural under
	// preserveUnknownFields (legacy CRDs from apiextensions/v1beta1 days); such objects are
	// neither pruned nor defaulted.
	structural *structuralschema.Structural
	// crd is the CRD the version belongs to, and otherVersions caches the structural schemas of
	// its other versions (see structuralOf).
	crd           *apiextensionsv1.CustomResourceDefinition
	otherVersions sync.Map
	// preserveUnknownFields is the CRD-wide legacy switch that turns pruning off.
	preserveUnknownFields bool
	strategy              strategy
	statusStrategy        strategy
	table                 rest.TableConvertor
}

// strategy is the part of apiextensions-apiserver's custom resource strategies the server
// needs; both the main and the /status strategy implement it. (Their concrete types are
// unexported, hence the interface.)
type strategy interface {
	PrepareForCreate(ctx context.Context, obj runtime.Object)
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	Validate(ctx context.Context, obj runtime.Object) field.ErrorList
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
	WarningsOnCreate(ctx context.Context, obj runtime.Object) []string
	WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string
	GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error)
}

// Compile prepares version of crd for handling its objects. The CRD is expected to be valid
// (see ValidateDefinition); an error means it cannot be served.
func Compile(crd *apiextensionsv1.CustomResourceDefinition, version string) (*Schema, error) {
	v := findVersion(crd, version)
	if v == nil {
		return nil, fmt.Errorf("version %q not found in CustomResourceDefinition %q", version, crd.Name)
	}
	s := &Schema{
		kind:                  schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: kindOf(crd)},
		namespaced:            crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		hasStatus:             v.Subresources != nil && v.Subresources.Status != nil,
		selectableNames:       selectableFieldNames(crd.Spec.Scope, v.SelectableFields),
		crd:                   crd,
		preserveUnknownFields: crd.Spec.PreserveUnknownFields,
	}
	props, err := internalSchema(v.Schema)
	if err != nil {
		return nil, err
	}
	if s.structural, err = structuralFor(props, crd.Spec.PreserveUnknownFields); err != nil {
		return nil, err
	}
	if err := s.buildStrategies(props, v); err != nil {
		return nil, err
	}
	s.table = newTableConvertor(v.AdditionalPrinterColumns)
	return s, nil
}

// GroupKind is what apierrors.NewInvalid wants to name the object's type.
func (s *Schema) GroupKind() schema.GroupKind { return s.kind.GroupKind() }

func findVersion(crd *apiextensionsv1.CustomResourceDefinition, version string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == version {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

// structuralOf is the structural schema of the CRD's version, by which kube-apiserver prunes
// and defaults an object of that apiVersion, whichever version it is served through (a patch
// may change the apiVersion; storage may hold objects of an earlier storage version). It is nil
// for a version the CRD does not have, or one without a schema.
func (s *Schema) structuralOf(version string) *structuralschema.Structural {
	if version == s.kind.Version {
		return s.structural
	}
	if cached, ok := s.otherVersions.Load(version); ok {
		return cached.(*structuralschema.Structural)
	}
	var structural *structuralschema.Structural
	if v := findVersion(s.crd, version); v != nil {
		if props, err := internalSchema(v.Schema); err == nil {
			structural, _ = structuralFor(props, s.preserveUnknownFields)
		}
	}
	s.otherVersions.Store(version, structural)
	return structural
}

// kindOf prefers the accepted kind, as kube-apiserver serves the names it accepted.
func kindOf(crd *apiextensionsv1.CustomResourceDefinition) string {
	if crd.Status.AcceptedNames.Kind != "" {
		return crd.Status.AcceptedNames.Kind
	}
	return crd.Spec.Names.Kind
}

// internalSchema converts the version's schema to the internal apiextensions type the
// validation libraries take. It returns nil when the version has no schema.
func internalSchema(v *apiextensionsv1.CustomResourceValidation) (*apiextensions.JSONSchemaProps, error) {
	if v == nil {
		return nil, nil
	}
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v, internal, nil); err != nil {
		return nil, fmt.Errorf("converting the schema: %w", err)
	}
	return internal.OpenAPIV3Schema, nil
}

// structuralFor builds the structural schema used for pruning, defaulting, CEL and embedded
// resources. Like kube-apiserver, it drops defaults that pruning would change, and tolerates a
// non-structural schema only under the legacy preserveUnknownFields.
func structuralFor(props *apiextensions.JSONSchemaProps, preserveUnknownFields bool) (*structuralschema.Structural, error) {
	if props == nil {
		return nil, nil
	}
	s, err := structuralschema.NewStructural(props)
	if err != nil {
		if preserveUnknownFields {
			return nil, nil
		}
		return nil, fmt.Errorf("the schema is not structural: %w", err)
	}
	if preserveUnknownFields {
		return s, nil
	}
	// The library does not deep-copy defaults into s; PruneDefaults must not change the CRD.
	s = s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		return nil, fmt.Errorf("pruning the schema's defaults: %w", err)
	}
	return s, nil
}

// buildStrategies creates apiextensions-apiserver's own strategies, which hold the schema
// validators and the compiled CEL programs.
func (s *Schema) buildStrategies(props *apiextensions.JSONSchemaProps, v *apiextensionsv1.CustomResourceDefinitionVersion) error {
	validator, _, err := apiservervalidation.NewSchemaValidator(props)
	if err != nil {
		return fmt.Errorf("building the schema validator: %w", err)
	}
	statusSpec, statusValidator, err := statusSubresource(props, v.Subresources)
	if err != nil {
		return err
	}
	scaleSpec, err := scaleSubresource(v.Subresources)
	if err != nil {
		return err
	}
	main := customresource.NewStrategy(nil, s.namespaced, s.kind, validator, statusValidator,
		s.structural, statusSpec, scaleSpec, v.SelectableFields)
	s.strategy = main
	s.statusStrategy = customresource.NewStatusStrategy(main)
	return nil
}

// statusSubresource returns the internal status subresource and, when the schema has a status
// property, the validator that /status writes are checked against.
func statusSubresource(props *apiextensions.JSONSchemaProps, sub *apiextensionsv1.CustomResourceSubresources) (*apiextensions.CustomResourceSubresourceStatus, apiservervalidation.SchemaValidator, error) {
	if sub == nil || sub.Status == nil {
		return nil, nil, nil
	}
	spec := &apiextensions.CustomResourceSubresourceStatus{}
	if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceStatus_To_apiextensions_CustomResourceSubresourceStatus(sub.Status, spec, nil); err != nil {
		return nil, nil, fmt.Errorf("converting the status subresource: %w", err)
	}
	if props == nil {
		return spec, nil, nil
	}
	statusProps, ok := props.Properties["status"]
	if !ok {
		return spec, nil, nil
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(&statusProps)
	if err != nil {
		return nil, nil, fmt.Errorf("building the status schema validator: %w", err)
	}
	return spec, validator, nil
}

func scaleSubresource(sub *apiextensionsv1.CustomResourceSubresources) (*apiextensions.CustomResourceSubresourceScale, error) {
	if sub == nil || sub.Scale == nil {
		return nil, nil
	}
	spec := &apiextensions.CustomResourceSubresourceScale{}
	if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(sub.Scale, spec, nil); err != nil {
		return nil, fmt.Errorf("converting the scale subresource: %w", err)
	}
	return spec, nil
}
