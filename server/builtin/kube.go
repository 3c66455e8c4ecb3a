package builtin

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/autoscaling"
	autoscalingvalidation "k8s.io/kubernetes/pkg/apis/autoscaling/validation"
	"k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"
	printerstorage "k8s.io/kubernetes/pkg/printers/storage"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/sqlkube/sqlkube/server/resource"
)

// kubeRules is a built-in type served with kube-apiserver's own rules, taken from the
// kubernetes main module: the type's strategies (k8s.io/kubernetes/pkg/registry/...), its
// defaults and conversions (legacyscheme.Scheme, with the type's group installed) and its
// table printer (k8s.io/kubernetes/pkg/printers/internalversion).
type kubeRules struct {
	// strategy is kube's strategy of the type (deployment.Strategy).
	strategy kubeStrategy
	// status is kube's strategy of its /status writes (deployment.StatusStrategy); nil
	// without /status.
	status rest.RESTUpdateStrategy
	// approval is kube's strategy of its /approval writes (certificates.ApprovalStrategy); nil
	// without /approval.
	approval rest.RESTUpdateStrategy
	// refuseDelete, when set, says which objects the type's REST storage refuses to delete by
	// name (resource.DeleteRefuser).
	refuseDelete func(name string) error
	// fields are the type's field selector labels beyond metadata (SelectableFields), as
	// its GetAttrs gives them.
	fields map[string][]string
	// table, when set, is the type's table convertor where kube's storage of it does not use
	// kube's printers (limitranges: the default columns).
	table rest.TableConvertor
	// internalTable, when set, is the table convertor of the type's internal objects where
	// kube's storage of it has its own rather than kube's printers (APIServices').
	internalTable rest.TableConvertor
	// orphanWarning, when set, is the warning a delete that orphans by default gets (Jobs').
	orphanWarning string
	// returnsDeleted is set when kube's storage of the type answers an immediate delete with the
	// deleted object rather than a Success Status (its ReturnDeletedObject).
	returnsDeleted bool
}

// kubeStrategy is what kube's registry asks of a type's strategy for creates and updates.
type kubeStrategy interface {
	rest.RESTCreateStrategy
	rest.RESTUpdateStrategy
}

// kube is the strategy of the built-in whose versioned Go type is V (appsv1.Deployment),
// following r. Each of its methods runs kube's pipeline on the unstructured objects the
// registry hands it: the object is converted to V (runtime.DefaultUnstructuredConverter) and
// to the internal type (the scheme's generated conversions), kube's strategy runs on that, and
// the methods that change the object (the Prepare ones, Canonicalize) convert it back. Request
// bodies get the version's defaults as they are decoded (Decode), as kube-apiserver's decoder
// gives them.
func kube[V any, PV interface {
	*V
	runtime.Object
}](r kubeRules) newStrategy {
	return func(res *resource.Resource) resource.TypedStrategy {
		res.ReturnsDeletedObject = r.returnsDeleted
		return &kubeTypeStrategy{
			res:       res,
			rules:     r,
			goType:    reflect.TypeFor[V](),
			newObject: func() runtime.Object { return PV(new(V)) },
			decode: decodeAs(func(v *V) {
				if internal := defaultedInternal(PV(v), res); internal != nil {
					gvk := PV(v).GetObjectKind().GroupVersionKind()
					*v = *new(V) // what only the version has (a Secret's stringData) is gone
					_ = legacyscheme.Scheme.Convert(internal, PV(v), nil)
					PV(v).GetObjectKind().SetGroupVersionKind(gvk)
				}
			}),
			toContent: contentConverter(reflect.TypeFor[V]()),
		}
	}
}

// defaultedInternal is what kube-apiserver's decoder makes of a decoded body: the version's
// defaults, then the conversion to the internal type, whose conversion back is what its field
// manager and strategy see (a DaemonSet's template generation annotation comes from it). nil if
// it does not convert (cannot happen: the type is installed).
func defaultedInternal(versioned runtime.Object, res *resource.Resource) runtime.Object {
	legacyscheme.Scheme.Default(versioned)
	internal, err := legacyscheme.Scheme.New(internalKind(res))
	if err != nil || legacyscheme.Scheme.Convert(versioned, internal, nil) != nil {
		return nil
	}
	return internal
}

// kubeTypeStrategy is the resource.TypedStrategy of a built-in served with kube's own rules
// (see kube).
type kubeTypeStrategy struct {
	res       *resource.Resource
	rules     kubeRules
	goType    reflect.Type
	newObject func() runtime.Object // an empty V
	decode    bodyDecoder
	toContent func(typed any) (map[string]any, error)
}

var (
	_ resource.TypedStrategy = (*kubeTypeStrategy)(nil)
	// The registry finds these optional parts by a type assertion: a changed signature would
	// only make them silently unused.
	_ resource.ConvertingCreater = (*kubeTypeStrategy)(nil)
	_ resource.ConvertingUpdater = (*kubeTypeStrategy)(nil)
	_ resource.ConvertingUpdater = kubeSubresourceStrategy{}
)

func (s *kubeTypeStrategy) GoType() reflect.Type { return s.goType }

func (s *kubeTypeStrategy) Decode(data []byte) (map[string]any, []error, error) {
	return s.decode.body(data)
}

func (s *kubeTypeStrategy) DecodeTyped(typed any) (map[string]any, error) {
	return s.decode.typed(typed)
}

func (s *kubeTypeStrategy) SelectableFields() map[string][]string { return s.rules.fields }

func (s *kubeTypeStrategy) NamespaceScoped() bool { return s.rules.strategy.NamespaceScoped() }

func (s *kubeTypeStrategy) PrepareForCreate(ctx context.Context, obj *unstructured.Unstructured) {
	s.change(obj, func(internal runtime.Object) { s.rules.strategy.PrepareForCreate(ctx, internal) })
}

func (s *kubeTypeStrategy) Canonicalize(obj *unstructured.Unstructured) {
	s.change(obj, s.rules.strategy.Canonicalize)
}

// Validate is kube's validation of a create (rest.ValidateCreate): the strategy's, the
// object metadata's and the type's declarative validation.
func (s *kubeTypeStrategy) Validate(ctx context.Context, obj *unstructured.Unstructured) field.ErrorList {
	internal, err := s.toInternal(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return rest.ValidateCreate(s.withRequestInfo(ctx), internal, s.rules.strategy)
}

// CanonicalizeAndValidate is Canonicalize and Validate on one conversion of obj
// (resource.ConvertingCreater): the internal object canonicalized is validated as obj holds it
// once written back, with the version's defaults.
func (s *kubeTypeStrategy) CanonicalizeAndValidate(ctx context.Context, obj *unstructured.Unstructured) field.ErrorList {
	internal, err := s.toInternal(obj)
	if err == nil {
		s.rules.strategy.Canonicalize(internal)
		internal, err = s.writeBack(internal, obj)
	}
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return rest.ValidateCreate(s.withRequestInfo(ctx), internal, s.rules.strategy)
}

func (s *kubeTypeStrategy) WarningsOnCreate(ctx context.Context, obj *unstructured.Unstructured) []string {
	internal, err := s.toInternal(obj)
	if err != nil {
		return nil // Validate has refused it
	}
	return s.rules.strategy.WarningsOnCreate(ctx, internal)
}

// AllowCreateOnUpdate and AllowUnconditionalUpdate are what kube's strategy says for the type:
// kube's strategies answer them without reading the request's context.
func (s *kubeTypeStrategy) AllowCreateOnUpdate() bool {
	return s.rules.strategy.AllowCreateOnUpdate(context.Background())
}

func (s *kubeTypeStrategy) AllowUnconditionalUpdate() bool {
	return s.rules.strategy.AllowUnconditionalUpdate(context.Background())
}

func (s *kubeTypeStrategy) PrepareForUpdate(ctx context.Context, obj, old *unstructured.Unstructured) {
	s.prepareUpdate(ctx, s.rules.strategy, obj, old)
}

func (s *kubeTypeStrategy) ValidateUpdate(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
	return s.validateUpdate(ctx, s.rules.strategy, obj, old)
}

func (s *kubeTypeStrategy) PrepareAndValidateUpdate(ctx context.Context, obj, old *unstructured.Unstructured, carry func(metav1.Object)) field.ErrorList {
	return s.prepareAndValidateUpdate(ctx, s.rules.strategy, obj, old, carry)
}

func (s *kubeTypeStrategy) WarningsOnUpdate(ctx context.Context, obj, old *unstructured.Unstructured) []string {
	internal, internalOld, err := s.toInternalPair(obj, old)
	if err != nil {
		return nil // ValidateUpdate has refused it
	}
	return s.rules.strategy.WarningsOnUpdate(ctx, internal, internalOld)
}

// ResetFields are the fields a write through subresource ("", "status" or "approval") resets, as
// kube's strategy of it says (rest.ResetFieldsStrategy): its manager does not own them. Other
// subresources reset none here (kube's pod ephemeralcontainers and resize strategies give a
// filter instead, which the registry does not apply).
func (s *kubeTypeStrategy) ResetFields(subresource string) map[fieldpath.APIVersion]*fieldpath.Set {
	var strategy any
	switch subresource {
	case "":
		strategy = s.rules.strategy
	case "status":
		strategy = s.rules.status
	case "approval":
		strategy = s.rules.approval
	}
	if resets, ok := strategy.(rest.ResetFieldsStrategy); ok {
		return resets.GetResetFields()
	}
	return nil
}

// ValidateScale is kube's validation of a Scale written through the type's /scale, given the
// Scale of the stored object (autoscaling's ValidateScaleUpdate, as kube's ScaleREST of the
// apps types runs it).
func (s *kubeTypeStrategy) ValidateScale(ctx context.Context, scale, old *autoscalingv1.Scale) field.ErrorList {
	internal, internalOld := &autoscaling.Scale{}, &autoscaling.Scale{}
	if err := legacyscheme.Scheme.Convert(scale, internal, nil); err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	if err := legacyscheme.Scheme.Convert(old, internalOld, nil); err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return autoscalingvalidation.ValidateScaleUpdate(s.withRequestInfo(ctx), internal, internalOld, legacyscheme.Scheme, autoscalingV1Scale{})
}

// autoscalingV1Scale says that the apps/v1 types' /scale serves autoscaling/v1 Scales, as kube's
// ScaleREST of them does (rest.GroupVersionKindProvider).
type autoscalingV1Scale struct{}

func (autoscalingV1Scale) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return autoscalingv1.SchemeGroupVersion.WithKind("Scale")
}

// NewEmpty is the type's empty object, its Go type's zero value, as kube-apiserver's creater
// makes it for recording a create's or an apply's managedFields.
func (s *kubeTypeStrategy) NewEmpty() *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: s.res.Group, Version: s.res.Version, Kind: s.res.Kind})
	s.setContent(obj, s.newObject())
	return obj
}

// TracksGeneration is false: kube's strategies set and bump metadata.generation themselves.
func (s *kubeTypeStrategy) TracksGeneration() bool { return false }

func (s *kubeTypeStrategy) StatusStrategy() resource.StatusStrategy {
	if s.rules.status == nil {
		return nil
	}
	return s.subresourceStrategy(s.rules.status)
}

// subresourceStrategy is the rules of writes through a subresource whose kube strategy is
// strategy (/status, a pod's /ephemeralcontainers).
func (s *kubeTypeStrategy) subresourceStrategy(strategy rest.RESTUpdateStrategy) resource.StatusStrategy {
	return kubeSubresourceStrategy{s, strategy}
}

func (s *kubeTypeStrategy) PrepareForDelete(context.Context, *unstructured.Unstructured) {}

// OrphansByDefault says whether a delete that names no propagation policy orphans the object's
// dependents, as kube's strategy of the type says for the served version (batch/v1 Jobs, v1
// ReplicationControllers); when it does, the delete gets the type's orphanWarning.
func (s *kubeTypeStrategy) OrphansByDefault(ctx context.Context) bool {
	gc, ok := s.rules.strategy.(rest.GarbageCollectionDeleteStrategy)
	if !ok || gc.DefaultGarbageCollectionPolicy(s.withRequestInfo(ctx)) != rest.OrphanDependents {
		return false
	}
	if s.rules.orphanWarning != "" {
		warning.AddWarning(ctx, "", s.rules.orphanWarning)
	}
	return true
}

func (s *kubeTypeStrategy) RefuseDelete(name string) error {
	if s.rules.refuseDelete == nil {
		return nil
	}
	return s.rules.refuseDelete(name)
}

var _ resource.GracefulDeleteStrategy = (*kubeTypeStrategy)(nil)

// BeforeDelete is kube's rest.BeforeDelete for the types whose strategy deletes gracefully
// (rest.RESTGracefulDeleteStrategy: pods): it sets obj's deletionTimestamp and
// deletionGracePeriodSeconds, and opts' gracePeriodSeconds, as kube's strategy decides them.
// The other types are never deleted gracefully.
func (s *kubeTypeStrategy) BeforeDelete(ctx context.Context, obj *unstructured.Unstructured, opts *metav1.DeleteOptions) (graceful, pending bool, err error) {
	if _, ok := s.rules.strategy.(rest.RESTGracefulDeleteStrategy); !ok {
		return false, false, nil
	}
	strategy, ok := s.rules.strategy.(rest.RESTDeleteStrategy)
	if !ok {
		return false, false, nil
	}
	converted := false
	s.change(obj, func(internal runtime.Object) {
		converted = true
		graceful, pending, err = rest.BeforeDelete(strategy, ctx, internal, opts)
	})
	if !converted {
		return false, false, fmt.Errorf("converting %s %q for its deletion", s.res.Kind, obj.GetName())
	}
	return graceful, pending, err
}

func (s *kubeTypeStrategy) HoldsDeletion(*unstructured.Unstructured) bool { return false }

func (s *kubeTypeStrategy) PrepareForFinalizing(*unstructured.Unstructured) {}

// ConvertToTable prints an *unstructured.Unstructured or an *unstructured.UnstructuredList
// with kube's printer of the internal type, or the type's own table convertor.
func (s *kubeTypeStrategy) ConvertToTable(ctx context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	if s.rules.table != nil {
		return s.rules.table.ConvertToTable(ctx, obj, tableOptions)
	}
	var internal runtime.Object
	var err error
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		internal, err = s.toInternal(o)
	case *unstructured.UnstructuredList:
		internal, err = s.toInternalList(o)
	default:
		err = fmt.Errorf("cannot print %T as a Table", obj)
	}
	if err != nil {
		return nil, err
	}
	if s.rules.internalTable != nil {
		return s.rules.internalTable.ConvertToTable(ctx, internal, tableOptions)
	}
	return kubePrinters().ConvertToTable(ctx, internal, tableOptions)
}

// kubePrinters is kube-apiserver's table printer of every built-in's internal type.
var kubePrinters = sync.OnceValue(func() printerstorage.TableConvertor {
	return printerstorage.TableConvertor{TableGenerator: printers.NewTableGenerator().With(printersinternal.AddHandlers)}
})

// kubeSubresourceStrategy is a built-in's rules of writes to one of its subresources (/status,
// /approval, a pod's /ephemeralcontainers): kube's strategy of that subresource.
type kubeSubresourceStrategy struct {
	s        *kubeTypeStrategy
	strategy rest.RESTUpdateStrategy
}

func (k kubeSubresourceStrategy) PrepareForUpdate(ctx context.Context, obj, old *unstructured.Unstructured) {
	k.s.prepareUpdate(ctx, k.strategy, obj, old)
}

// TakesWholeObject: kube's strategy of the subresource resets what a write through it may not
// change, each its own part (resource.WholeObjectStatusStrategy).
func (kubeSubresourceStrategy) TakesWholeObject() {}

func (k kubeSubresourceStrategy) ValidateUpdate(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
	return k.s.validateUpdate(ctx, k.strategy, obj, old)
}

func (k kubeSubresourceStrategy) PrepareAndValidateUpdate(ctx context.Context, obj, old *unstructured.Unstructured, carry func(metav1.Object)) field.ErrorList {
	return k.s.prepareAndValidateUpdate(ctx, k.strategy, obj, old, carry)
}

// prepareUpdate runs strategy's PrepareForUpdate on obj and old as internal objects, and
// writes obj back.
func (s *kubeTypeStrategy) prepareUpdate(ctx context.Context, strategy rest.RESTUpdateStrategy, obj, old *unstructured.Unstructured) {
	internalOld, err := s.toInternal(old)
	if err != nil {
		return // stored objects convert; ValidateUpdate reports it otherwise
	}
	s.change(obj, func(internal runtime.Object) { strategy.PrepareForUpdate(ctx, internal, internalOld) })
}

// validateUpdate is kube's validation of an update by strategy (rest.ValidateUpdate): the
// object metadata's, the strategy's and the type's declarative validation.
func (s *kubeTypeStrategy) validateUpdate(ctx context.Context, strategy rest.RESTUpdateStrategy, obj, old *unstructured.Unstructured) field.ErrorList {
	internal, internalOld, err := s.toInternalPair(obj, old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return rest.ValidateUpdate(s.withRequestInfo(ctx), internal, internalOld, strategy)
}

// prepareAndValidateUpdate is prepareUpdate, carry and validateUpdate on one conversion of obj
// and of old (resource.ConvertingUpdater): the internal object prepared is validated as obj holds
// it once written back, with the version's defaults, and with what carry gives both.
func (s *kubeTypeStrategy) prepareAndValidateUpdate(ctx context.Context, strategy rest.RESTUpdateStrategy, obj, old *unstructured.Unstructured, carry func(metav1.Object)) field.ErrorList {
	internal, internalOld, err := s.toInternalPair(obj, old)
	if err == nil {
		strategy.PrepareForUpdate(ctx, internal, internalOld)
		internal, err = s.writeBack(internal, obj)
	}
	carry(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	carry(internal.(metav1.Object))
	return rest.ValidateUpdate(s.withRequestInfo(ctx), internal, internalOld, strategy)
}

// withRequestInfo is ctx with the request info kube's declarative validation reads the
// served version from: a write that does not come through HTTP (a controller's) gets one
// naming the type.
func (s *kubeTypeStrategy) withRequestInfo(ctx context.Context) context.Context {
	if _, ok := genericrequest.RequestInfoFrom(ctx); ok {
		return ctx
	}
	return genericrequest.WithRequestInfo(ctx, &genericrequest.RequestInfo{
		IsResourceRequest: true, APIGroup: s.res.Group, APIVersion: s.res.Version, Resource: s.res.Name,
	})
}

// change applies f to obj as an internal object and writes the result back to obj. An object
// that does not convert (a mutating webhook made a field the wrong type) is left as it is:
// validation then refuses it.
func (s *kubeTypeStrategy) change(obj *unstructured.Unstructured, f func(internal runtime.Object)) {
	_ = resource.Internally(s, obj, func(internal runtime.Object) error {
		f(internal)
		return nil
	})
}

// ToInternal is obj as the type's internal Go type (core.Node), which kube's admission
// plugins read and change.
func (s *kubeTypeStrategy) ToInternal(obj *unstructured.Unstructured) (runtime.Object, error) {
	return s.toInternal(obj)
}

// FromInternal makes obj's content that of internal, an object of the type's internal Go type,
// with the version's defaults; obj keeps its apiVersion and kind. kube's storage decoder
// defaults every object it reads, so what a strategy cleared and the defaults give back (a
// claim's status.phase Pending) is what kube-apiserver answers, even for the create.
func (s *kubeTypeStrategy) FromInternal(internal runtime.Object, obj *unstructured.Unstructured) error {
	versioned, err := s.defaultedVersioned(internal, obj)
	if err != nil {
		return err
	}
	s.setContent(obj, versioned)
	return nil
}

// writeBack is FromInternal, returning the internal object obj then holds (internal with the
// version's defaults), converted from the versioned object rather than from obj's content.
func (s *kubeTypeStrategy) writeBack(internal runtime.Object, obj *unstructured.Unstructured) (runtime.Object, error) {
	versioned, err := s.defaultedVersioned(internal, obj)
	if err != nil {
		return nil, err
	}
	s.setContent(obj, versioned)
	return s.versionedToInternal(versioned, obj)
}

// defaultedVersioned is internal, obj's internal form, converted to the type's versioned Go type
// and defaulted.
func (s *kubeTypeStrategy) defaultedVersioned(internal runtime.Object, obj *unstructured.Unstructured) (runtime.Object, error) {
	versioned := s.newObject()
	if err := legacyscheme.Scheme.Convert(internal, versioned, nil); err != nil {
		return nil, fmt.Errorf("converting %s %q: %w", s.res.Kind, obj.GetName(), err)
	}
	legacyscheme.Scheme.Default(versioned)
	return versioned, nil
}

// Default gives obj the defaults of kube's scheme for its version, as kube-apiserver's field
// manager does to the result of a server-side apply (which is not decoded as a request body).
func (s *kubeTypeStrategy) Default(obj *unstructured.Unstructured) {
	versioned := s.newObject()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, versioned); err != nil {
		return // validation refuses it
	}
	legacyscheme.Scheme.Default(versioned)
	s.setContent(obj, versioned)
}

// setContent makes obj's content that of versioned, an object of the type's Go type (which
// conversion leaves without apiVersion and kind: obj keeps its own).
func (s *kubeTypeStrategy) setContent(obj *unstructured.Unstructured, versioned runtime.Object) {
	content, err := s.toContent(versioned)
	if err != nil {
		return // cannot happen: the type converts to unstructured content
	}
	content["apiVersion"], content["kind"] = obj.GetAPIVersion(), obj.GetKind()
	obj.Object = content
}

// toInternal converts obj to the type's internal Go type, through its versioned Go type. obj
// may also be in the version the type is stored in, when another (an autoscaling/v2 HPA served
// as v1): Tables print a built-in's stored object, as kube-apiserver does (server/table.go).
func (s *kubeTypeStrategy) toInternal(obj *unstructured.Unstructured) (runtime.Object, error) {
	if !s.res.ServesStorageVersion() && obj.GetAPIVersion() == s.res.StorageGroupVersion().String() {
		return kubeConverter{hub: internalKind(s.res)}.toInternal(obj)
	}
	versioned := s.newObject()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, versioned); err != nil {
		return nil, fmt.Errorf("converting %s %q: %w", s.res.Kind, obj.GetName(), err)
	}
	return s.versionedToInternal(versioned, obj)
}

// versionedToInternal converts versioned, obj's content as the type's versioned Go type, to the
// internal type.
func (s *kubeTypeStrategy) versionedToInternal(versioned runtime.Object, obj *unstructured.Unstructured) (runtime.Object, error) {
	internal, err := legacyscheme.Scheme.New(internalKind(s.res))
	if err != nil {
		return nil, err
	}
	if err := legacyscheme.Scheme.Convert(versioned, internal, nil); err != nil {
		return nil, fmt.Errorf("converting %s %q: %w", s.res.Kind, obj.GetName(), err)
	}
	return internal, nil
}

func (s *kubeTypeStrategy) toInternalPair(obj, old *unstructured.Unstructured) (runtime.Object, runtime.Object, error) {
	internal, err := s.toInternal(obj)
	if err != nil {
		return nil, nil, err
	}
	internalOld, err := s.toInternal(old)
	return internal, internalOld, err
}

// toInternalList converts a list of the type's objects to its internal list type.
func (s *kubeTypeStrategy) toInternalList(list *unstructured.UnstructuredList) (runtime.Object, error) {
	kind := internalKind(s.res)
	internalList, err := legacyscheme.Scheme.New(kind.GroupVersion().WithKind(kind.Kind + "List"))
	if err != nil {
		return nil, err
	}
	items := make([]runtime.Object, 0, len(list.Items))
	for i := range list.Items {
		item, err := s.toInternal(&list.Items[i])
		if err != nil {
			return nil, err
		}
		items = append(items, item)
	}
	if err := meta.SetList(internalList, items); err != nil {
		return nil, err
	}
	listMeta, err := meta.ListAccessor(internalList)
	if err != nil {
		return nil, err
	}
	listMeta.SetResourceVersion(list.GetResourceVersion())
	listMeta.SetContinue(list.GetContinue())
	listMeta.SetRemainingItemCount(list.GetRemainingItemCount())
	return internalList, nil
}
