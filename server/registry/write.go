package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// maxGenerateNameAttempts is how many generated names a create tries before giving up, as
// kube-apiserver does.
const maxGenerateNameAttempts = 8

// errResourceVersionOnCreate is kube-apiserver's answer to a POST whose object carries a
// resourceVersion: its storage refuses the create with a plain error, which it answers, like any
// error that is not a Status, as 500 with no reason. (A dry run never reaches storage, so it
// succeeds; kube-apiserver also validates the object first, where we refuse it before.)
var errResourceVersionOnCreate = &apierrors.StatusError{ErrStatus: metav1.Status{
	Status:  metav1.StatusFailure,
	Code:    http.StatusInternalServerError,
	Reason:  metav1.StatusReasonUnknown,
	Message: "resourceVersion should not be set on objects to be created",
}}

// create applies kube-apiserver's create rules to obj and stores it. As there, the system fields
// are wiped before managedFields are recorded, so that no manager owns them.
func (r *Registry) create(ctx context.Context, req *request, obj *unstructured.Unstructured) (sqlstore.Object, error) {
	rest.WipeObjectMetaSystemFields(obj)
	obj = recordManagedFields(ctx, req, replaceAll, obj, nil)
	obj.SetResourceVersion("")
	namespace := rest.ExpectedNamespaceForScope(req.namespace, req.res.Namespaced)
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(namespace, obj); err != nil {
		return sqlstore.Object{}, err
	}
	if req.res.Namespaced && !r.admissionChecksNamespaces(ctx) {
		if err := r.CheckNamespaceAcceptsContent(ctx, req.gr, obj.GetName(), namespace); err != nil {
			return sqlstore.Object{}, err
		}
	}
	if err := r.mutate(ctx, req, admission.Create, obj, nil); err != nil {
		return sqlstore.Object{}, err
	}
	rest.FillObjectMetaSystemFields(obj)
	req.res.Strategy.PrepareForCreate(ctx, obj)
	if req.res.Strategy.TracksGeneration() {
		obj.SetGeneration(1)
	}
	if obj.GetName() != "" || obj.GetGenerateName() == "" {
		return r.storeNew(ctx, req, obj)
	}
	return r.createWithGeneratedName(ctx, req, obj)
}

// createWithGeneratedName tries names made from generateName until one is free.
func (r *Registry) createWithGeneratedName(ctx context.Context, req *request, obj *unstructured.Unstructured) (sqlstore.Object, error) {
	var err error
	for range maxGenerateNameAttempts {
		obj.SetName(names.SimpleNameGenerator.GenerateName(obj.GetGenerateName()))
		var stored sqlstore.Object
		stored, err = r.storeNew(ctx, req, obj)
		if !apierrors.IsAlreadyExists(err) {
			return stored, err
		}
	}
	return sqlstore.Object{}, err
}

// storeNew validates and writes a prepared new object, whose name is final, with what the
// type's allocations give it (a Service's cluster IPs), given back if the create fails.
func (r *Registry) storeNew(ctx context.Context, req *request, obj *unstructured.Unstructured) (sqlstore.Object, error) {
	return allocating(func() (resource.Finish, error) {
		if req.res.Allocations == nil {
			return noAllocations, nil
		}
		return req.res.Allocations.BeginCreate(ctx, obj, req.dryRun)
	}, func() (sqlstore.Object, error) { return r.storeAllocated(ctx, req, obj) })
}

// allocating runs write between begin, a type's Begin allocation hook, and the Finish it
// returns, told whether write succeeded.
func allocating(begin func() (resource.Finish, error), write func() (sqlstore.Object, error)) (sqlstore.Object, error) {
	finish, err := begin()
	if err != nil {
		return sqlstore.Object{}, err
	}
	stored, err := write()
	finish(err == nil)
	return stored, err
}

func noAllocations(bool) {}

// afterDelete gives back what the deleted obj held, for the types with allocations.
func afterDelete(ctx context.Context, req *request, obj *unstructured.Unstructured) {
	if req.res.Allocations != nil {
		req.res.Allocations.AfterDelete(ctx, obj, req.dryRun)
	}
}

// storeAllocated validates and writes a new object storeNew has readied.
func (r *Registry) storeAllocated(ctx context.Context, req *request, obj *unstructured.Unstructured) (sqlstore.Object, error) {
	if err := canonicalizeAndValidate(ctx, req.res, obj); err != nil {
		return sqlstore.Object{}, err
	}
	if err := r.admit(ctx, req, admission.Create, obj, nil); err != nil {
		return sqlstore.Object{}, err
	}
	key := sqlstore.Key{Resource: req.res.StorageName, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	stored, err := r.write(ctx, req, objectWrite(sqlstore.OpCreate, key, 0, req.res, obj))
	if err != nil {
		err = storedobj.StorageError(err, req.gr, obj.GetName())
		if apierrors.IsAlreadyExists(err) && r.beingDeleted(ctx, key) {
			// kube-apiserver tells why the name is still taken.
			status := err.(*apierrors.StatusError)
			status.ErrStatus.Message = "object is being deleted: " + status.ErrStatus.Message
		}
		return sqlstore.Object{}, err
	}
	return stored, nil
}

// beingDeleted tells whether the object stored at key has a deletionTimestamp.
func (r *Registry) beingDeleted(ctx context.Context, key sqlstore.Key) bool {
	current, err := r.store.Get(ctx, key)
	if err != nil {
		return false
	}
	obj, err := storedobj.DecodeStored(current.Value)
	return err == nil && obj.GetDeletionTimestamp() != nil
}

// write stores a change and runs the type's AfterWrite hook. A dry run only renders what would
// be stored (without a resourceVersion for a create), after checking a create's name is free.
func (r *Registry) write(ctx context.Context, req *request, w sqlstore.Write) (sqlstore.Object, error) {
	if req.dryRun {
		return dryRunWrite(ctx, r.store, w)
	}
	stored, err := r.store.Write(ctx, w)
	if err != nil {
		return sqlstore.Object{}, err
	}
	if r.isNamespaces(req.res) {
		r.namespaces.wrote(stored.Revision)
	}
	r.afterWrite(ctx, req, stored.Revision)
	return stored, nil
}

func dryRunWrite(ctx context.Context, store Storage, w sqlstore.Write) (sqlstore.Object, error) {
	if w.Op == sqlstore.OpCreate {
		if _, err := store.Get(ctx, w.Key); err == nil {
			return sqlstore.Object{}, sqlstore.ErrExists
		} else if !errors.Is(err, sqlstore.ErrNotFound) {
			return sqlstore.Object{}, err
		}
	}
	value, err := w.Render(w.ExpectedRevision)
	if err != nil {
		return sqlstore.Object{}, err
	}
	return sqlstore.Object{Key: w.Key, Revision: w.ExpectedRevision, Value: value}, nil
}

// afterWrite runs the type's AfterWrite hook. The write has succeeded whatever it says, so a
// failure is only logged.
func (r *Registry) afterWrite(ctx context.Context, req *request, revision int64) {
	if req.res.AfterWrite == nil {
		return
	}
	if err := req.res.AfterWrite(ctx, revision); err != nil {
		r.log.Warn("after-write hook failed", "resource", req.gr.String(), "revision", revision, "err", err)
	}
}

// updateMode says which part of the object an update replaces: it is the subresource written
// through, "" for the object itself. A subresource other than these has rules of its own
// (resource.Subresource.Strategy), which take their part from the body.
type updateMode string

const (
	replaceAll        updateMode = ""         // PUT on the object: everything but the system metadata
	replaceStatus     updateMode = "status"   // PUT on /status: only the status
	replaceFinalizers updateMode = "finalize" // PUT on /finalize (namespaces): only spec.finalizers
)

// checkObjectName makes an update's body name the object of its URL, as kube-apiserver requires:
// its namespace is checked first, as the body is decoded, then its name.
func checkObjectName(obj *unstructured.Unstructured, req *request) error {
	if ns := obj.GetNamespace(); req.namespace != "" && ns != "" && ns != req.namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if obj.GetName() == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s based on URL) was undeterminable: name must be provided", req.name))
	}
	if obj.GetName() != req.name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", obj.GetName(), req.name))
	}
	return nil
}

// update replaces the stored object with obj. With a resourceVersion in obj, the update applies
// only to that version (409 otherwise); without, it applies to whatever is current, retried
// when a concurrent write wins the race, for the types that allow it. Types that allow it create
// a missing object; created says so.
func (r *Registry) update(ctx context.Context, req *request, obj *unstructured.Unstructured, mode updateMode) (stored sqlstore.Object, created bool, err error) {
	strategy := req.res.Strategy
	expected := obj.GetResourceVersion()
	for {
		current, err := r.store.Get(ctx, req.key())
		if errors.Is(err, sqlstore.ErrNotFound) && strategy.AllowCreateOnUpdate() && mode == replaceAll {
			stored, err := r.create(ctx, req, obj.DeepCopy())
			if apierrors.IsAlreadyExists(err) {
				continue // created meanwhile: update it
			}
			return stored, err == nil, err
		}
		if err != nil {
			return sqlstore.Object{}, false, storedobj.StorageError(err, req.gr, req.name)
		}
		if err := checkUIDPrecondition(req, obj.GetUID(), current); err != nil {
			return sqlstore.Object{}, false, err
		}
		if expected == "" && !strategy.AllowUnconditionalUpdate() {
			return sqlstore.Object{}, false, errResourceVersionRequired(req)
		}
		if expected != "" && expected != revisionString(current.Revision) {
			return sqlstore.Object{}, false, apierrors.NewConflict(req.gr, req.name, errors.New(storedobj.ConflictMessage))
		}
		old, err := storedobj.DecodeServed(req.res, current.Value)
		if err == nil {
			stored, err = r.applyUpdate(ctx, req, current, old, obj.DeepCopy(), mode)
		}
		if errors.Is(err, sqlstore.ErrConflict) && expected == "" {
			continue
		}
		if err != nil {
			return sqlstore.Object{}, false, storedobj.StorageError(err, req.gr, req.name)
		}
		return stored, false, nil
	}
}

// errResourceVersionRequired is kube-apiserver's 422 for an update without resourceVersion of a
// type that needs one; it names the resource where the kind would be.
func errResourceVersionRequired(req *request) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: req.gr.Group, Kind: req.gr.Resource}, req.name, field.ErrorList{
		field.Invalid(field.NewPath("metadata", "resourceVersion"), uint64(0), "must be specified for an update"),
	})
}

// applyUpdate makes one attempt at an update against the current stored object, old as the
// caller decoded it (once: a patch's or a scale's old is the one the write was made from).
func (r *Registry) applyUpdate(ctx context.Context, req *request, current sqlstore.Object, old, obj *unstructured.Unstructured, mode updateMode) (sqlstore.Object, error) {
	if mode == replaceStatus || mode == replaceFinalizers {
		obj = subresourceUpdate(req.res, mode, obj, old)
	}
	obj = recordManagedFields(ctx, req, mode, obj, old)
	// An unconditional update applies to the current version, as kube-apiserver's does.
	obj.SetResourceVersion(old.GetResourceVersion())
	if err := r.mutate(ctx, req, admission.Update, obj, old); err != nil {
		return sqlstore.Object{}, err
	}
	return allocating(func() (resource.Finish, error) {
		if req.res.Allocations == nil || mode != replaceAll {
			return noAllocations, nil
		}
		return req.res.Allocations.BeginUpdate(ctx, obj, old, req.dryRun)
	}, func() (sqlstore.Object, error) { return r.storeUpdate(ctx, req, current, obj, old, mode) })
}

// storeUpdate validates and writes an update applyUpdate has readied.
func (r *Registry) storeUpdate(ctx context.Context, req *request, current sqlstore.Object, obj, old *unstructured.Unstructured, mode updateMode) (sqlstore.Object, error) {
	if err := prepareAndValidateUpdate(ctx, req, mode, obj, old); err != nil {
		return sqlstore.Object{}, err
	}
	if err := r.admit(ctx, req, admission.Update, obj, old); err != nil {
		return sqlstore.Object{}, err
	}
	// An unchanged object is not written, unless it is stored stale (an old encryption key):
	// rewriting every object unchanged is how keys are rotated, as with kube-apiserver.
	if equalObjects(obj, old) && !current.Stale {
		return current, nil
	}
	// As kube-apiserver's store, an update deletes an object being deleted once no finalizer
	// holds it, unless a grace period still runs (a pod's, which its kubelet ends).
	if obj.GetDeletionTimestamp() != nil && !hasFinalizers(req.res, obj) && gracePeriod(old) == 0 {
		return r.deleteWithoutFinalizers(ctx, req, current, old, obj)
	}
	return r.write(ctx, req, objectWrite(sqlstore.OpUpdate, req.key(), current.Revision, req.res, obj))
}

// deleteWithoutFinalizers deletes an object being deleted whose last finalizer the update obj
// removes. As in kube-apiserver's store, the update itself is never written: watchers see the
// deletion of the object as it was stored (old, finalizers and all), and the client gets obj
// back, at the revision it updated.
func (r *Registry) deleteWithoutFinalizers(ctx context.Context, req *request, current sqlstore.Object, old, obj *unstructured.Unstructured) (sqlstore.Object, error) {
	deletion := objectWrite(sqlstore.OpDelete, req.key(), current.Revision, req.res, old)
	if _, err := r.write(ctx, req, deletion); err != nil {
		return sqlstore.Object{}, err
	}
	afterDelete(ctx, req, old)
	rendered, _ := render(req.res, obj)
	value, err := rendered(current.Revision)
	return sqlstore.Object{Key: current.Key, Revision: current.Revision, Value: value}, err
}

// prepareAndValidateUpdate applies the rules of an update through mode (updateRules), then
// carries over what an update cannot change, in kube-apiserver's BeforeUpdate's order: a
// strategy may clear what is carried over (a pod's status strategy clears the
// deletionTimestamp), and the stored value wins. Then it validates the result. A strategy whose
// rules run on kube's internal types (resource.ConvertingUpdater) does the three on one
// conversion of each object.
func prepareAndValidateUpdate(ctx context.Context, req *request, mode updateMode, obj, old *unstructured.Unstructured) error {
	namespace := rest.ExpectedNamespaceForScope(req.namespace, req.res.Namespaced)
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(namespace, obj); err != nil {
		return err
	}
	obj.SetGeneration(old.GetGeneration())
	carry := func(o metav1.Object) {
		carryOver(o, old)
		if req.res.Strategy.TracksGeneration() && specChanged(obj, old) {
			o.SetGeneration(old.GetGeneration() + 1)
		}
	}
	rules := updateRules(req.res, mode)
	if converting, ok := rules.(resource.ConvertingUpdater); ok && mode != replaceFinalizers {
		return invalid(req.res, obj, converting.PrepareAndValidateUpdate(ctx, obj, old, carry))
	}
	if mode != replaceFinalizers {
		rules.PrepareForUpdate(ctx, obj, old)
	}
	carry(obj)
	return invalid(req.res, obj, rules.ValidateUpdate(ctx, obj, old))
}

// updateRules are the rules of an update through mode: the status strategy's for a /status
// write, the type's for the object itself and for /finalize (which only validates), a
// subresource's own for one that has rules.
func updateRules(res *resource.Resource, mode updateMode) resource.StatusStrategy {
	switch mode {
	case replaceStatus:
		return res.Strategy.StatusStrategy()
	case replaceAll, replaceFinalizers:
		return res.Strategy
	}
	return res.SubresourceStrategy(string(mode))
}

// carryOver gives obj what an update cannot change from the stored object old.
func carryOver(obj metav1.Object, old *unstructured.Unstructured) {
	if obj.GetUID() == "" {
		obj.SetUID(old.GetUID())
	}
	obj.SetCreationTimestamp(old.GetCreationTimestamp())
	if old.GetDeletionTimestamp() != nil {
		obj.SetDeletionTimestamp(old.GetDeletionTimestamp())
	}
	if old.GetDeletionGracePeriodSeconds() != nil && obj.GetDeletionGracePeriodSeconds() == nil {
		obj.SetDeletionGracePeriodSeconds(old.GetDeletionGracePeriodSeconds())
	}
}

// subresourceUpdate is what a PUT on a subresource writes: old with only the subresource's
// part taken from the body (status for /status, spec.finalizers for /finalize). A /status
// write whose strategy takes the whole object (kube's, a custom resource's) is left to it.
func subresourceUpdate(res *resource.Resource, mode updateMode, body, old *unstructured.Unstructured) *unstructured.Unstructured {
	if _, whole := res.Strategy.StatusStrategy().(resource.WholeObjectStatusStrategy); whole && mode == replaceStatus {
		return body
	}
	path := []string{"status"}
	if mode == replaceFinalizers {
		path = []string{"spec", "finalizers"}
	}
	out := old.DeepCopy()
	if value, found, _ := unstructured.NestedFieldCopy(body.Object, path...); found {
		_ = unstructured.SetNestedField(out.Object, value, path...)
	} else {
		unstructured.RemoveNestedField(out.Object, path...)
	}
	// The body's managedFields are the write's own (an apply to the subresource sets them).
	out.SetManagedFields(body.GetManagedFields())
	return out
}

// hasFinalizers reports whether anything still holds obj from being deleted: its finalizers,
// or what its type's strategy says does (a namespace's spec.finalizers).
func hasFinalizers(res *resource.Resource, obj *unstructured.Unstructured) bool {
	return len(obj.GetFinalizers()) > 0 || res.Strategy.HoldsDeletion(obj)
}

func equalObjects(a, b *unstructured.Unstructured) bool {
	return equality.Semantic.DeepEqual(a.Object, b.Object)
}

// delete removes the object, or, when finalizers hold it, marks it as being deleted. It reports
// whether the object is gone.
func (r *Registry) delete(ctx context.Context, req *request, opts *metav1.DeleteOptions) (sqlstore.Object, bool, error) {
	// As in kube-apiserver, mutating admission sees no object on a delete; validating
	// admission sees the object deleted.
	if err := r.mutate(ctx, req, admission.Delete, nil, nil); err != nil {
		return sqlstore.Object{}, false, err
	}
	for {
		current, err := r.store.Get(ctx, req.key())
		if err != nil {
			return sqlstore.Object{}, false, storedobj.StorageError(err, req.gr, req.name)
		}
		obj, err := storedobj.DecodeServed(req.res, current.Value)
		if err != nil {
			return sqlstore.Object{}, false, storedobj.ReadFailed(req.res, req.namespace, req.name, err)
		}
		if err := checkPreconditions(req, opts.Preconditions, obj); err != nil {
			return sqlstore.Object{}, false, err
		}
		if err := r.admit(ctx, req, admission.Delete, nil, obj); err != nil {
			return sqlstore.Object{}, false, err
		}
		stored, deleted, err := r.deleteAttempt(ctx, req, current, obj, opts)
		if errors.Is(err, sqlstore.ErrConflict) {
			continue // preconditions are checked again against the newer object
		}
		if err != nil {
			return sqlstore.Object{}, false, storedobj.StorageError(err, req.gr, req.name)
		}
		return stored, deleted, nil
	}
}

// deleteAttempt deletes current, or marks it with a deletionTimestamp when finalizers hold it
// (a namespace's spec.finalizers among them, and the garbage collector's finalizers opts ask
// for, which a repeated delete may change, as in kube-apiserver's store).
func (r *Registry) deleteAttempt(ctx context.Context, req *request, current sqlstore.Object, obj *unstructured.Unstructured, opts *metav1.DeleteOptions) (sqlstore.Object, bool, error) {
	if obj.GetDeletionTimestamp() == nil {
		req.res.Strategy.PrepareForDelete(ctx, obj)
	}
	graceful, pending, err := beforeGracefulDelete(ctx, req.res, obj, opts)
	if err != nil || pending {
		return current, false, err
	}
	// A delete that names a policy follows it; only one that names none asks the type's default
	// (which may warn, as kube's Job storage does).
	orphaner, ok := req.res.Strategy.(resource.DefaultOrphaner)
	namesPolicy := opts.OrphanDependents != nil || opts.PropagationPolicy != nil
	propagationChanged := setPropagationFinalizers(obj, opts, ok && !namesPolicy && orphaner.OrphansByDefault(ctx))
	if graceful {
		return r.deleteGracefully(ctx, req, current, obj)
	}
	if !hasFinalizers(req.res, obj) {
		stored, err := r.write(ctx, req, objectWrite(sqlstore.OpDelete, req.key(), current.Revision, req.res, obj))
		if err == nil {
			afterDelete(ctx, req, obj)
		}
		return stored, err == nil, err
	}
	if obj.GetDeletionTimestamp() != nil && !propagationChanged {
		return current, false, nil
	}
	resource.MarkDeleting(obj)
	req.res.Strategy.PrepareForFinalizing(obj)
	stored, err := r.write(ctx, req, objectWrite(sqlstore.OpUpdate, req.key(), current.Revision, req.res, obj))
	return stored, false, err
}

// beforeGracefulDelete asks the type's strategy whether obj is deleted gracefully (see
// resource.GracefulDeleteStrategy); types without grace periods are not.
func beforeGracefulDelete(ctx context.Context, res *resource.Resource, obj *unstructured.Unstructured, opts *metav1.DeleteOptions) (graceful, pending bool, err error) {
	strategy, ok := res.Strategy.(resource.GracefulDeleteStrategy)
	if !ok {
		return false, false, nil
	}
	return strategy.BeforeDelete(ctx, obj, opts)
}

// deleteGracefully writes obj, which the strategy has marked with a deletionTimestamp and a
// grace period, as kube-apiserver's store does: it stays while that period is not 0 or
// finalizers hold it; otherwise it is then deleted at once (watchers see both writes).
func (r *Registry) deleteGracefully(ctx context.Context, req *request, current sqlstore.Object, obj *unstructured.Unstructured) (sqlstore.Object, bool, error) {
	stored, err := r.write(ctx, req, objectWrite(sqlstore.OpUpdate, req.key(), current.Revision, req.res, obj))
	if err != nil || gracePeriod(obj) > 0 || hasFinalizers(req.res, obj) {
		return stored, false, err
	}
	stored, err = r.write(ctx, req, objectWrite(sqlstore.OpDelete, req.key(), stored.Revision, req.res, obj))
	return stored, err == nil, err
}

// gracePeriod is obj's deletionGracePeriodSeconds, 0 when not set.
func gracePeriod(obj *unstructured.Unstructured) int64 {
	if period := obj.GetDeletionGracePeriodSeconds(); period != nil {
		return *period
	}
	return 0
}

// checkPreconditions applies DeleteOptions.preconditions; a mismatch is 409 worded as
// kube-apiserver's BeforeDelete words it, naming the object's kind where the resource would be
// (namespaces: as kube's namespace storage words it).
func checkPreconditions(req *request, p *metav1.Preconditions, obj *unstructured.Unstructured) error {
	if p == nil {
		return nil
	}
	if req.gr == namespacesGR {
		return checkNamespacePreconditions(p, obj)
	}
	kind := schema.GroupResource{Group: req.res.Group, Resource: req.res.Kind}
	if p.UID != nil && *p.UID != obj.GetUID() {
		return apierrors.NewConflict(kind, req.name, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, obj.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != obj.GetResourceVersion() {
		return apierrors.NewConflict(kind, req.name, fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, obj.GetResourceVersion()))
	}
	return nil
}

// checkUIDPrecondition makes an update whose object carries a uid apply only to the stored
// object of that uid: kube-apiserver turns the uid into a storage precondition, checked before
// anything else about the update, whose failure is a 409 quoting its storage error.
func checkUIDPrecondition(req *request, uid types.UID, current sqlstore.Object) error {
	if uid == "" {
		return nil
	}
	var stored struct {
		Metadata struct {
			UID types.UID `json:"uid"`
		} `json:"metadata"`
	}
	if err := storedobj.UnmarshalStored(current.Value, &stored); err != nil {
		return err
	}
	if stored.Metadata.UID == uid {
		return nil
	}
	message := fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, stored.Metadata.UID)
	return apierrors.NewConflict(req.gr, req.name, storage.NewInvalidObjError(storedobj.EtcdKey(req.res, req.namespace, req.name), message))
}
