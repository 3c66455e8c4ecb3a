package crdtype

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sqlkube/sqlkube/server/crdschema"
	"github.com/sqlkube/sqlkube/server/resource"
)

// definitionStrategy is the CustomResourceDefinition type's strategy: its Go type's (decoding,
// defaulting, table), with apiextensions-apiserver's rules for preparing, validating and
// deleting CRDs on top.
type definitionStrategy struct {
	resource.TypedStrategy
	res   *resource.Resource
	taken TakenNames
}

var _ resource.TypedStrategy = (*definitionStrategy)(nil)

func (s *definitionStrategy) PrepareForCreate(_ context.Context, obj *unstructured.Unstructured) {
	prepare(s.taken, obj, nil)
}

func (s *definitionStrategy) PrepareForUpdate(_ context.Context, obj, old *unstructured.Unstructured) {
	prepare(s.taken, obj, old)
}

func (s *definitionStrategy) Validate(_ context.Context, obj *unstructured.Unstructured) field.ErrorList {
	return append(resource.ValidateMetadata(s.res, obj, nil), validate(obj, nil)...)
}

func (s *definitionStrategy) ValidateUpdate(_ context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
	return append(resource.ValidateMetadata(s.res, obj, old), validate(obj, old)...)
}

func (s *definitionStrategy) PrepareForDelete(_ context.Context, obj *unstructured.Unstructured) {
	prepareForDelete(obj)
}

// StatusStrategy validates a /status write as any update of a CRD.
func (s *definitionStrategy) StatusStrategy() resource.StatusStrategy { return definitionStatus{s} }

type definitionStatus struct{ main *definitionStrategy }

func (definitionStatus) PrepareForUpdate(context.Context, *unstructured.Unstructured, *unstructured.Unstructured) {
}

func (s definitionStatus) ValidateUpdate(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
	return s.main.ValidateUpdate(ctx, obj, old)
}

// customResourceStrategy is the strategy of one served version of a CRD: its schema's
// (apiextensions-apiserver's custom resource strategy), which prunes, defaults and validates
// the objects (their metadata included) and prints them with the version's printer columns.
type customResourceStrategy struct {
	res    *resource.Resource
	schema *crdschema.Schema
}

var _ resource.Strategy = (*customResourceStrategy)(nil)

func (s *customResourceStrategy) NamespaceScoped() bool { return s.res.Namespaced }

func (s *customResourceStrategy) ConvertToTable(ctx context.Context, obj runtime.Object, opts runtime.Object) (*metav1.Table, error) {
	tableOptions, _ := opts.(*metav1.TableOptions)
	return s.schema.Table(ctx, obj, tableOptions)
}

func (s *customResourceStrategy) PrepareForCreate(_ context.Context, obj *unstructured.Unstructured) {
	s.schema.PrepareForCreate(obj)
}

func (s *customResourceStrategy) Canonicalize(*unstructured.Unstructured) {}

func (s *customResourceStrategy) Validate(ctx context.Context, obj *unstructured.Unstructured) field.ErrorList {
	return s.schema.Validate(ctx, obj, nil)
}

// WarningsOnCreate warns of finalizer names that are not domain-qualified.
func (s *customResourceStrategy) WarningsOnCreate(_ context.Context, obj *unstructured.Unstructured) []string {
	return s.schema.Warnings(obj, nil)
}

func (s *customResourceStrategy) AllowCreateOnUpdate() bool { return false }

func (s *customResourceStrategy) AllowUnconditionalUpdate() bool { return false }

func (s *customResourceStrategy) PrepareForUpdate(_ context.Context, obj, old *unstructured.Unstructured) {
	s.schema.PrepareForUpdate(obj, old)
}

// ValidateUpdate checks the metadata's update rules, as kube-apiserver's generic update does,
// then the schema's, which checks the metadata again: kube-apiserver's 422 lists a custom
// resource's metadata errors twice.
func (s *customResourceStrategy) ValidateUpdate(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
	return append(resource.ValidateMetadata(s.res, obj, old), s.schema.Validate(ctx, obj, old)...)
}

func (s *customResourceStrategy) WarningsOnUpdate(_ context.Context, obj, old *unstructured.Unstructured) []string {
	return s.schema.Warnings(obj, old)
}

func (s *customResourceStrategy) TracksGeneration() bool { return true }

// StatusStrategy is the schema's status strategy, for versions with a /status subresource.
func (s *customResourceStrategy) StatusStrategy() resource.StatusStrategy {
	if !s.res.Status {
		return nil
	}
	return customResourceStatus{s}
}

func (s *customResourceStrategy) PrepareForDelete(context.Context, *unstructured.Unstructured) {}

func (s *customResourceStrategy) HoldsDeletion(*unstructured.Unstructured) bool { return false }

func (s *customResourceStrategy) PrepareForFinalizing(*unstructured.Unstructured) {}

// customResourceStatus is a custom resource's /status rules: everything but the status is
// taken from the stored object, and the status checked against the schema.
type customResourceStatus struct{ main *customResourceStrategy }

func (s customResourceStatus) PrepareForUpdate(_ context.Context, obj, old *unstructured.Unstructured) {
	s.main.schema.PrepareForStatusUpdate(obj, old)
}

// TakesWholeObject: PrepareForUpdate keeps the status of the object sent, as
// apiextensions-apiserver's status strategy does.
func (customResourceStatus) TakesWholeObject() {}

func (s customResourceStatus) ValidateUpdate(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
	return append(resource.ValidateMetadata(s.main.res, obj, old), s.main.schema.ValidateStatus(ctx, obj, old)...)
}
