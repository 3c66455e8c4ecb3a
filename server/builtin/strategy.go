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

// rules are what a built-in type whose Go type is T, not served with kube's strategy (see kube),
// does beyond the rules every built-in shares; typed turns them into the type's strategy. Two
// kinds of types have them: CRDs, which get the catalog's rules on top, and the hot types whose
// writes kube's strategy makes markedly dearer (hotRules).
type rules[T any] struct {
	// adjust applies what kube-apiserver's defaulting or conversion does to a decoded body.
	adjust func(*T)
	// validate is kube-apiserver's validation of the type beyond metadata; old is nil on
	// create. nil: metadata only.
	validate func(obj, old *T) field.ErrorList
	// printer is kube's strategy of the type, whose table printer (kube's) prints it; nil:
	// kube-apiserver's default columns (Name, Created At).
	printer newStrategy
	// untracked: the type's kube-apiserver strategy never sets metadata.generation.
	untracked bool
	// createOnUpdate: a PUT of a missing object creates it.
	createOnUpdate bool
	// conditional: a PUT must name the resourceVersion it replaces.
	conditional bool
	// fields are the type's field selector labels beyond metadata (SelectableFields).
	fields map[string][]string
}

// newStrategy makes a built-in's strategy, given its description.
type newStrategy func(res *resource.Resource) resource.TypedStrategy

// typed is the strategy of the built-in whose Go type is T, following r.
func typed[T any, PT interface {
	*T
	metav1.Object
}](r rules[T]) newStrategy {
	return func(res *resource.Resource) resource.TypedStrategy {
		var table rest.TableConvertor = rest.NewDefaultTableConvertor(res.GroupResource())
		if r.printer != nil {
			table = r.printer(res)
		}
		return &typeStrategy[T, PT]{TableConvertor: table, res: res, rules: r, decode: decodeAs(r.adjust)}
	}
}

// typeStrategy is a built-in's resource.Strategy: T is its Go type, which decodes its bodies
// and validates its objects (their metadata included).
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
	return s.decode.body(data)
}

func (s *typeStrategy[T, PT]) DecodeTyped(typed any) (map[string]any, error) {
	return s.decode.typed(typed)
}

func (s *typeStrategy[T, PT]) NamespaceScoped() bool { return s.res.Namespaced }

// NewEmpty is T's zero value, which kube-apiserver's creater makes for recording a create's or
// an apply's managedFields: the structs that are not pointers (a spec) are there, empty, so that
// a create does not own them.
func (s *typeStrategy[T, PT]) NewEmpty() *unstructured.Unstructured {
	return emptyObject[T](schema.GroupVersionKind{Group: s.res.Group, Version: s.res.Version, Kind: s.res.Kind})
}

// emptyObject is T's zero value as an object of kind gvk.
func emptyObject[T any](gvk schema.GroupVersionKind) *unstructured.Unstructured {
	content, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(new(T)) // cannot fail: a Go type
	empty := &unstructured.Unstructured{Object: content}
	empty.SetGroupVersionKind(gvk)
	return empty
}

func (s *typeStrategy[T, PT]) PrepareForCreate(context.Context, *unstructured.Unstructured) {}

func (s *typeStrategy[T, PT]) Canonicalize(*unstructured.Unstructured) {}

func (s *typeStrategy[T, PT]) Validate(_ context.Context, obj *unstructured.Unstructured) field.ErrorList {
	return s.validateAs(obj, nil)
}

func (s *typeStrategy[T, PT]) WarningsOnCreate(context.Context, *unstructured.Unstructured) []string {
	return nil
}

func (s *typeStrategy[T, PT]) AllowCreateOnUpdate() bool { return s.rules.createOnUpdate }

func (s *typeStrategy[T, PT]) AllowUnconditionalUpdate() bool { return !s.rules.conditional }

func (s *typeStrategy[T, PT]) PrepareForUpdate(context.Context, *unstructured.Unstructured, *unstructured.Unstructured) {
}

func (s *typeStrategy[T, PT]) ValidateUpdate(_ context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
	return s.validateAs(obj, old)
}

func (s *typeStrategy[T, PT]) WarningsOnUpdate(context.Context, *unstructured.Unstructured, *unstructured.Unstructured) []string {
	return nil
}

func (s *typeStrategy[T, PT]) TracksGeneration() bool { return !s.rules.untracked }

func (s *typeStrategy[T, PT]) SelectableFields() map[string][]string { return s.rules.fields }

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

// validateAs checks obj (and old, nil on create) read as T, which Decode made them fit, once for
// both the metadata validation (cheaper on T's ObjectMeta than on the unstructured object) and
// the type's own. A type without its own validation has its metadata checked as it is.
func (s *typeStrategy[T, PT]) validateAs(obj, old *unstructured.Unstructured) field.ErrorList {
	if s.rules.validate == nil {
		return resource.ValidateMetadata(s.res, obj, metaOrNil(old))
	}
	typed, err := fromUnstructured[T](obj)
	if err != nil {
		return append(resource.ValidateMetadata(s.res, obj, metaOrNil(old)), field.InternalError(nil, err))
	}
	if old == nil {
		return append(resource.ValidateMetadata(s.res, PT(typed), nil), s.rules.validate(typed, nil)...)
	}
	typedOld, err := fromUnstructured[T](old)
	if err != nil {
		return append(resource.ValidateMetadata(s.res, obj, old), field.InternalError(nil, err))
	}
	return append(resource.ValidateMetadata(s.res, PT(typed), PT(typedOld)), s.rules.validate(typed, typedOld)...)
}

// metaOrNil is obj as a metav1.Object, nil (not a nil pointer) when obj is nil.
func metaOrNil(obj *unstructured.Unstructured) metav1.Object {
	if obj == nil {
		return nil
	}
	return obj
}

// statusStrategy is a built-in's /status rules: the registry has already taken the status
// from the request onto the stored object; the update is validated as any.
type statusStrategy struct{ main resource.Strategy }

func (statusStrategy) PrepareForUpdate(context.Context, *unstructured.Unstructured, *unstructured.Unstructured) {
}

func (s statusStrategy) ValidateUpdate(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
	return s.main.ValidateUpdate(ctx, obj, old)
}
