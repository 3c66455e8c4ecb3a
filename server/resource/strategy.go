package resource

import (
	"context"
	"reflect"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Strategy is one type's object rules, which the registry applies around every write: what
// kube-apiserver's rest.RESTCreateStrategy, rest.RESTUpdateStrategy and rest.TableConvertor are
// for a type, with the same method names, on the unstructured objects the registry works with.
// Every served stored type has one (Resource.Strategy): the built-ins' come from package
// builtin, the CustomResourceDefinition type's and the custom resources' from package crdtype.
//
// The registry's own steps frame the strategy's, as kube-apiserver's generic registry frames
// its strategies' (rest.BeforeCreate, rest.BeforeUpdate):
//
//   - create: system metadata wiped and filled, managedFields recorded, mutating admission,
//     then PrepareForCreate, metadata.generation set to 1 if TracksGeneration, the name
//     generated from generateName if needed, Canonicalize, Validate (422 Invalid with its
//     errors), validating admission, the write; the created object's WarningsOnCreate are
//     returned with it.
//   - update (of the main resource): the stored object's uid, creationTimestamp, generation
//     and deletion fields carried over, then PrepareForUpdate, metadata.generation bumped if
//     TracksGeneration and anything outside metadata and status changed, then ValidateUpdate.
//     AllowCreateOnUpdate and AllowUnconditionalUpdate say what a PUT may leave out.
//   - /status writes use StatusStrategy's PrepareForUpdate and ValidateUpdate instead.
//   - delete: PrepareForDelete on an object not yet being deleted; when finalizers (or
//     HoldsDeletion) keep it, it is marked deleting (resource.MarkDeleting) and
//     PrepareForFinalizing runs.
//
// The methods run on the registry's request path: no I/O, no blocking. They may change the
// objects they are given (the Prepare ones are meant to), never keep them. Validate's and
// ValidateUpdate's errors become apierrors.NewInvalid(kind, name, errs); they include the
// metadata checks the type wants (resource.ValidateMetadata), since kube's strategies also
// validate metadata themselves.
//
// An adapter from one of kube's typed strategies (k8s.io/kubernetes/pkg/registry/...)
// converts the unstructured objects to the internal type and back around each call.
type Strategy interface {
	rest.TableConvertor

	// NamespaceScoped is true for namespaced types; it agrees with Resource.Namespaced.
	NamespaceScoped() bool

	// PrepareForCreate readies a new object before validation: it sets what the client may
	// not (a status the type starts with, fields a create clears).
	PrepareForCreate(ctx context.Context, obj *unstructured.Unstructured)
	// Canonicalize makes a new object's content canonical once its name is final (a name
	// generated from generateName is not known to PrepareForCreate).
	Canonicalize(obj *unstructured.Unstructured)
	// Validate checks a new object, after PrepareForCreate and Canonicalize.
	Validate(ctx context.Context, obj *unstructured.Unstructured) field.ErrorList
	// WarningsOnCreate are the Warning headers of a successful create of obj.
	WarningsOnCreate(ctx context.Context, obj *unstructured.Unstructured) []string

	// AllowCreateOnUpdate is true when a PUT of a missing object creates it.
	AllowCreateOnUpdate() bool
	// AllowUnconditionalUpdate is true when a PUT may leave metadata.resourceVersion out
	// (then it applies to whatever is stored).
	AllowUnconditionalUpdate() bool
	// PrepareForUpdate readies an update of the main resource before validation, given the
	// stored object old (for example, keeps the stored status).
	PrepareForUpdate(ctx context.Context, obj, old *unstructured.Unstructured)
	// ValidateUpdate checks an update (of the main resource, or of /finalize) against the
	// stored object old, immutability rules included.
	ValidateUpdate(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList
	// WarningsOnUpdate are the Warning headers of an update. The registry does not send them
	// yet (nor did it before the strategies); kube-apiserver does.
	WarningsOnUpdate(ctx context.Context, obj, old *unstructured.Unstructured) []string

	// TracksGeneration is true for the types whose metadata.generation counts the changes of
	// everything outside metadata and status (the registry sets and bumps it). kube's own
	// strategies set it in their Prepare methods: an adapter answers false.
	TracksGeneration() bool

	// StatusStrategy is the rules of writes to the /status subresource, nil for a type
	// without one.
	StatusStrategy() StatusStrategy

	// PrepareForDelete runs on the stored object when a delete is requested for an object
	// that has no deletionTimestamp yet. It may add finalizers: the delete then marks the
	// object deleting (200 with the object) instead of removing it. CRDs add their cleanup
	// finalizer here.
	PrepareForDelete(ctx context.Context, obj *unstructured.Unstructured)
	// HoldsDeletion is true when something besides metadata.finalizers keeps obj from being
	// removed (a namespace's spec.finalizers).
	HoldsDeletion(obj *unstructured.Unstructured) bool
	// PrepareForFinalizing runs when a delete marks obj deleting (its finalizers hold it),
	// after deletionTimestamp is set: a namespace's phase becomes Terminating.
	PrepareForFinalizing(obj *unstructured.Unstructured)
}

// GracefulDeleteStrategy is implemented by the strategies of types whose deletion may wait a
// grace period (pods), as kube's rest.RESTGracefulDeleteStrategy is. The registry asks it on
// every delete (after PrepareForDelete), as kube-apiserver's store runs rest.BeforeDelete:
//
//   - pending: a graceful deletion is under way and opts do not shorten it: the delete
//     changes nothing and answers the stored object.
//   - graceful: BeforeDelete has set obj's deletionTimestamp and deletionGracePeriodSeconds
//     (and opts.GracePeriodSeconds): the object is written so, and stays until that period is 0
//     and no finalizer holds it.
//   - neither: the delete goes on as for any type.
type GracefulDeleteStrategy interface {
	BeforeDelete(ctx context.Context, obj *unstructured.Unstructured, opts *metav1.DeleteOptions) (graceful, pending bool, err error)
}

// StatusStrategy is the rules of a type's /status writes, as kube's status strategies are.
// Unless it is a WholeObjectStatusStrategy, the registry has already taken the status from the
// request onto the stored object.
type StatusStrategy interface {
	PrepareForUpdate(ctx context.Context, obj, old *unstructured.Unstructured)
	ValidateUpdate(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList
}

// WholeObjectStatusStrategy is a StatusStrategy whose PrepareForUpdate is handed the whole
// object a /status write sent, and itself resets what the write may not change, as kube's
// status strategies are: each type resets its own part (a pod keeps the request's labels and
// annotations, a ServiceCIDR resets them, a custom resource keeps only the status).
type WholeObjectStatusStrategy interface {
	StatusStrategy
	TakesWholeObject()
}

// ConvertingCreater is the Strategy of a type whose rules run on another form of the objects
// than the registry's unstructured one (kube's internal types): CanonicalizeAndValidate is
// Canonicalize then Validate, with obj converted once instead of at each step.
type ConvertingCreater interface {
	CanonicalizeAndValidate(ctx context.Context, obj *unstructured.Unstructured) field.ErrorList
}

// ConvertingUpdater is the rules of an update (a Strategy, a StatusStrategy, a subresource's)
// that run on another form of the objects than the registry's unstructured one: kube's internal
// types. PrepareAndValidateUpdate is PrepareForUpdate, then carry, then ValidateUpdate, with each
// object converted once instead of at each step. carry is the registry's part between the two
// (what an update takes from the stored object); it runs on obj, once obj holds the prepared
// object, then on the form validated.
type ConvertingUpdater interface {
	PrepareAndValidateUpdate(ctx context.Context, obj, old *unstructured.Unstructured, carry func(metav1.Object)) field.ErrorList
}

// DeleteRefuser is the Strategy of a type some of whose objects may never be deleted one by
// one: RefuseDelete is the error for the object named name (kube's 403 for a system
// PriorityClass), nil for the others.
type DeleteRefuser interface {
	RefuseDelete(name string) error
}

// DefaultOrphaner is the Strategy of a type whose deletes orphan its dependents when neither
// the DeleteOptions nor the object's finalizers say otherwise (kube's default garbage collection
// policy of batch/v1 Jobs).
type DefaultOrphaner interface {
	OrphansByDefault(ctx context.Context) bool
}

// The optional parts of a built-in's strategy served with kube's rules (builtin's kube adapter),
// which the registry's steps and kube's plugins and hooks ask for when a type has them:

// EmptyObjecter makes the type's empty object: its Go type's zero value, as kube-apiserver's
// creater makes it (the structs that are not pointers are there, empty, so that a create does
// not own them in managedFields).
type EmptyObjecter interface {
	NewEmpty() *unstructured.Unstructured
}

// Defaulter defaults the type's objects as kube's scheme does (field managers compare objects
// defaulted so).
type Defaulter interface {
	Default(obj *unstructured.Unstructured)
}

// ResetFielder says which fields a write through subresource ("" or "status") resets, as kube's
// strategies say it (rest.ResetFieldsStrategy).
type ResetFielder interface {
	ResetFields(subresource string) map[fieldpath.APIVersion]*fieldpath.Set
}

// ScaleValidator validates a Scale written through /scale as kube's scale subresources do (a
// custom resource's Scale is checked by the object's validation instead).
type ScaleValidator interface {
	ValidateScale(ctx context.Context, scale, old *autoscalingv1.Scale) field.ErrorList
}

// InternalObjects converts the type's objects to kube's internal Go type and back, which kube's
// admission plugins and storage hooks (the services' allocations) read and change.
type InternalObjects interface {
	ToInternal(obj *unstructured.Unstructured) (runtime.Object, error)
	FromInternal(internal runtime.Object, obj *unstructured.Unstructured) error
}

// Internally runs f on obj as the internal type c converts it to and, if f succeeds, writes the
// result back to obj.
func Internally(c InternalObjects, obj *unstructured.Unstructured, f func(internal runtime.Object) error) error {
	internal, err := c.ToInternal(obj)
	if err != nil {
		return err
	}
	if err := f(internal); err != nil {
		return err
	}
	return c.FromInternal(internal, obj)
}

// TypedStrategy is the Strategy of a type that has a Go type (the built-ins): request bodies
// are decoded through it, strategic merge patches take their merge keys from it, and OpenAPI
// its schema. A custom resource's strategy is not one: its schema prunes and defaults its
// bodies instead.
type TypedStrategy interface {
	Strategy
	// GoType is the type's Go type (corev1.ConfigMap).
	GoType() reflect.Type
	// Decode reads a request body, as JSON (for a patch, the patched object), as the Go type,
	// as kube-apiserver's decoder does: it returns the object's content as the type encodes
	// it, without the fields the type does not know, and the body's strict errors (duplicate
	// and unknown fields, `unknown field "spec.foo"`, in document order) for the
	// fieldValidation warnings or Strict error. An error means the body does not decode as the
	// type: kube-apiserver answers 400 "KIND in version "V" cannot be handled as a KIND: <err>".
	Decode(data []byte) (content map[string]any, strictErrs []error, err error)
	// DecodeTyped is Decode for typed, a *GoType converted from unstructured content (a
	// strategic merge patch's result, which kube-apiserver converts so rather than decoding it
	// as JSON): its content as Decode gives it, without reading JSON again.
	DecodeTyped(typed any) (content map[string]any, err error)
	// SelectableFields are the field selector labels the type supports beyond metadata.name
	// and metadata.namespace, each with the path of the field it reads in a stored object
	// ("source": {"source", "component"}), as kube's strategies' GetAttrs give them; nil for
	// none. A custom resource's come from its schema instead.
	SelectableFields() map[string][]string
}

// GoType is r's Go type, nil for a type without one (custom resources).
func (r *Resource) GoType() reflect.Type {
	if typed, ok := r.Strategy.(TypedStrategy); ok {
		return typed.GoType()
	}
	return r.AnswerType
}

// Typed is r's strategy as a TypedStrategy, nil for a type without a Go type.
func (r *Resource) Typed() TypedStrategy {
	typed, _ := r.Strategy.(TypedStrategy)
	return typed
}
