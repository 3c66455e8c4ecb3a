package builtin

import (
	"context"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/sqlkube/sqlkube/server/resource"
)

// rules are what a built-in type whose Go type is T, served without kube's strategy (CRDs, which
// get the catalog's rules on top), does beyond the rules every built-in shares; typed turns them
// into the type's strategy.
type rules[T any] struct {
	// adjust applies what kube-apiserver's defaulting or conversion does to a decoded body.
	adjust func(*T)
	// conditional: a PUT must name the resourceVersion it replaces.
	conditional bool
}

// newStrategy makes a built-in's strategy, given its description.
type newStrategy func(res *resource.Resource) resource.TypedStrategy

// typed is the strategy of the built-in whose Go type is T, following r: its objects are
// validated as any object's metadata, and printed in the default columns (Name, Created At).
func typed[T any, PT interface {
	*T
	metav1.Object
}](r rules[T]) newStrategy {
	return func(res *resource.Resource) resource.TypedStrategy {
		return &typeStrategy[T, PT]{TableConvertor: rest.NewDefaultTableConvertor(res.GroupResource()), res: res, rules: r, decode: decodeAs(r.adjust)}
	}
}

// typeStrategy is a built-in's resource.Strategy: T is its Go type, which decodes its bodies.
type typeStrategy[T any, PT interface {
	*T
	metav1.Object
}] struct {
	rest.TableConvertor
	res    *resource.Resource
	rules  rules[T]
	decode bodyDecoder
}

var _ resource.TypedStrategy = (*typeStrategy[metav1.PartialObjectMetadata, *metav1.PartialObjectMetadata])(nil)

func (s *typeStrategy[T, PT]) GoType() reflect.Type { return reflect.TypeFor[T]() }

func (s *typeStrategy[T, PT]) Decode(data []byte) (map[string]any, []error, error) {
	return s.decode(data)
}

func (s *typeStrategy[T, PT]) NamespaceScoped() bool { return s.res.Namespaced }

// NewEmpty is T's zero value, which kube-apiserver's creater makes for recording a create's or
// an apply's managedFields: the structs that are not pointers (a spec) are there, empty, so that
// a create does not own them.
func (s *typeStrategy[T, PT]) NewEmpty() *unstructured.Unstructured {
	content, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(new(T)) // cannot fail: a Go type
	empty := &unstructured.Unstructured{Object: content}
	empty.SetGroupVersionKind(schema.GroupVersionKind{Group: s.res.Group, Version: s.res.Version, Kind: s.res.Kind})
	return empty
}

func (s *typeStrategy[T, PT]) PrepareForCreate(context.Context, *unstructured.Unstructured) {}

func (s *typeStrategy[T, PT]) Canonicalize(*unstructured.Unstructured) {}

func (s *typeStrategy[T, PT]) Validate(_ context.Context, obj *unstructured.Unstructured) field.ErrorList {
	return resource.ValidateMetadata(s.res, obj, nil)
}

func (s *typeStrategy[T, PT]) WarningsOnCreate(context.Context, *unstructured.Unstructured) []string {
	return nil
}

func (s *typeStrategy[T, PT]) AllowCreateOnUpdate() bool { return false }

func (s *typeStrategy[T, PT]) AllowUnconditionalUpdate() bool { return !s.rules.conditional }

func (s *typeStrategy[T, PT]) PrepareForUpdate(context.Context, *unstructured.Unstructured, *unstructured.Unstructured) {
}

func (s *typeStrategy[T, PT]) ValidateUpdate(_ context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
	return resource.ValidateMetadata(s.res, obj, old)
}

func (s *typeStrategy[T, PT]) WarningsOnUpdate(context.Context, *unstructured.Unstructured, *unstructured.Unstructured) []string {
	return nil
}

func (s *typeStrategy[T, PT]) TracksGeneration() bool { return true }

func (s *typeStrategy[T, PT]) SelectableFields() map[string][]string { return nil }

// StatusStrategy validates a /status write as any update: kube's status strategies of the
// built-ins served run the type's update validation.
func (s *typeStrategy[T, PT]) StatusStrategy() resource.StatusStrategy {
	if !s.res.Status {
		return nil
	}
	return statusStrategy{s}
}

func (s *typeStrategy[T, PT]) PrepareForDelete(context.Context, *unstructured.Unstructured) {}

func (s *typeStrategy[T, PT]) HoldsDeletion(*unstructured.Unstructured) bool { return false }

func (s *typeStrategy[T, PT]) PrepareForFinalizing(*unstructured.Unstructured) {}

// statusStrategy is a built-in's /status rules: the registry has already taken the status
// from the request onto the stored object; the update is validated as any.
type statusStrategy struct{ main resource.Strategy }

func (statusStrategy) PrepareForUpdate(context.Context, *unstructured.Unstructured, *unstructured.Unstructured) {
}

func (s statusStrategy) ValidateUpdate(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
	return s.main.ValidateUpdate(ctx, obj, old)
}
