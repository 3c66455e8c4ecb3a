package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sqlkube/sqlkube/server/registry/continuetoken"
	"github.com/sqlkube/sqlkube/server/registry/fieldmanagers"
	"github.com/sqlkube/sqlkube/server/registry/scales"
	"github.com/sqlkube/sqlkube/server/registry/selection"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// Get reads one object. opts.ResourceVersion gives a get its not-older-than meaning: "" and "0"
// read the latest state, N waits until the store has reached N (504 if it does not in time). The
// object of a computed type is computed now.
func (r *Registry) Get(ctx context.Context, ref Ref, opts *metav1.GetOptions) (sqlstore.Object, error) {
	if err := checkPathName(ref.Name); err != nil {
		return sqlstore.Object{}, err
	}
	if ref.Resource.Computed != nil {
		return getComputed(ctx, ref)
	}
	rv, err := ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return sqlstore.Object{}, err
	}
	if rv > 0 {
		if err := r.WaitForRevision(ctx, rv); err != nil {
			return sqlstore.Object{}, err
		}
	}
	req := newRequest(ref, nil, "", nil)
	obj, err := r.store.Get(ctx, req.key())
	if err != nil {
		return sqlstore.Object{}, storedobj.StorageError(err, req.gr, req.name)
	}
	return obj, nil
}

// Create stores a new object in ref's collection (ref.Namespace for a namespaced type), with
// kube-apiserver's create rules, and returns it with the warnings its type has about it (the
// answer's Warning headers). opts.FieldManager owns the fields written.
func (r *Registry) Create(ctx context.Context, ref Ref, obj *unstructured.Unstructured, opts *metav1.CreateOptions) (sqlstore.Object, []string, error) {
	if err := CheckCreate(ref); err != nil {
		return sqlstore.Object{}, nil, err
	}
	dryRun := len(opts.DryRun) > 0
	if obj.GetResourceVersion() != "" && !dryRun {
		return sqlstore.Object{}, nil, errResourceVersionOnCreate
	}
	stored, err := r.create(ctx, newRequest(ref, opts.DryRun, opts.FieldManager, opts), obj)
	if err != nil {
		return sqlstore.Object{}, nil, err
	}
	return stored, ref.Resource.Strategy.WarningsOnCreate(ctx, obj), nil
}

// CheckCreate refuses what Create refuses whatever the object: objects of a CRD being deleted
// (405, as apiextensions-apiserver answers). The HTTP layer calls it before decoding the body,
// as kube-apiserver refuses such a create before reading it.
func CheckCreate(ref Ref) error {
	if ref.Resource.Terminating {
		return apierrors.NewMethodNotSupported(ref.Resource.GroupResource(), "create")
	}
	return nil
}

// Update replaces the object ref names (or, through ref.Subresource "status", "approval" or "finalize", that
// part of it) with obj. With a resourceVersion in obj, it applies only to that version (409
// otherwise); without, to whatever is current, for the types that allow it. Types that allow it
// create a missing object; created says so.
func (r *Registry) Update(ctx context.Context, ref Ref, obj *unstructured.Unstructured, opts *metav1.UpdateOptions) (stored sqlstore.Object, created bool, err error) {
	req := newRequest(ref, opts.DryRun, opts.FieldManager, opts)
	if err := checkObjectName(obj, req); err != nil {
		return sqlstore.Object{}, false, err
	}
	if err := checkPathName(ref.Name); err != nil {
		return sqlstore.Object{}, false, err
	}
	return r.update(ctx, req, obj, updateModeOf(ref.Resource, ref.Subresource))
}

// Patch applies a patch of patchType (JSON, merge, strategic merge or apply) to the object ref
// names (or to its status), and writes the result as Update does. An apply creates a missing
// object; created says so. warnings are the answer's Warning headers, even with an error.
func (r *Registry) Patch(ctx context.Context, ref Ref, patchType types.PatchType, body []byte, opts *metav1.PatchOptions) (stored sqlstore.Object, created bool, warnings []string, err error) {
	if err := checkPathName(ref.Name); err != nil {
		return sqlstore.Object{}, false, nil, err
	}
	p := &patchRequest{patchType: patchType, body: body, opts: opts}
	req := newRequest(ref, opts.DryRun, p.manager(), opts)
	stored, created, err = r.patch(ctx, req, p, updateModeOf(ref.Resource, ref.Subresource))
	return stored, created, p.warnings, err
}

// Delete deletes the object ref names, or, when finalizers hold it, marks it as being deleted
// (deleted false, stored the object as marked). opts carries preconditions, the propagation
// policy and dry-run. A name its type's strategy refuses to delete (resource.DeleteRefuser) is
// refused first, as kube's REST storage of the type refuses it; a delete of the collection does
// not ask, as in kube-apiserver.
func (r *Registry) Delete(ctx context.Context, ref Ref, opts *metav1.DeleteOptions) (stored sqlstore.Object, deleted bool, err error) {
	if err := checkPathName(ref.Name); err != nil {
		return sqlstore.Object{}, false, err
	}
	if refuser, ok := ref.Resource.Strategy.(resource.DeleteRefuser); ok {
		if err := refuser.RefuseDelete(ref.Name); err != nil {
			return sqlstore.Object{}, false, err
		}
	}
	req := newRequest(ref, opts.DryRun, "", opts)
	if err := r.checkNamespaceDeletable(req); err != nil {
		return sqlstore.Object{}, false, err
	}
	return r.delete(ctx, req, opts)
}

// DeleteCollection deletes every object of ref's collection that listOpts select, each as Delete
// would. As kube-apiserver answers, the objects are given to each as listed before their
// deletion, in key order, and the list's metadata (its revision) is returned.
func (r *Registry) DeleteCollection(ctx context.Context, ref Ref, listOpts *internalversion.ListOptions, opts *metav1.DeleteOptions, each func(sqlstore.Object) error) (metav1.ListMeta, error) {
	sel, err := newSelection(ref.Resource, listOpts)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	listed, revision, err := r.selectedObjects(ctx, ref, sel)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	for _, obj := range listed {
		one := newRequest(Ref{Resource: ref.Resource, Namespace: obj.Key.Namespace, Name: obj.Key.Name}, opts.DryRun, "", opts)
		if _, _, err := r.delete(ctx, one, opts); err != nil && !apierrors.IsNotFound(err) { // not found: deleted meanwhile
			return metav1.ListMeta{}, err
		}
	}
	for _, obj := range listed {
		if err := each(obj); err != nil {
			return metav1.ListMeta{}, err
		}
	}
	return metav1.ListMeta{ResourceVersion: revisionString(revision)}, nil
}

// selectedObjects lists the objects sel selects in ref's collection, and the revision read.
func (r *Registry) selectedObjects(ctx context.Context, ref Ref, sel *selection.Selection) ([]sqlstore.Object, int64, error) {
	opts := sqlstore.ListOptions{Resource: ref.Resource.StorageName, Namespace: ref.Namespace}
	if !sel.Empty() {
		opts.Filter = sel.Filter()
	}
	var objects []sqlstore.Object
	result, err := r.store.List(ctx, opts, func(o sqlstore.Object) error {
		objects = append(objects, o)
		return nil
	})
	if err != nil {
		return nil, 0, storedobj.ListStorageError(err, ref.Resource)
	}
	return objects, result.Revision, nil
}

// List streams the objects of ref's collection that opts select to each, in key order, as
// kube-apiserver's resourceVersion, resourceVersionMatch, limit and continue rules say, and
// returns the list's metadata (its revision, and a continue token while more remain). A computed
// type's objects are computed now, and listed without a revision.
func (r *Registry) List(ctx context.Context, ref Ref, opts *internalversion.ListOptions, each func(sqlstore.Object) error) (metav1.ListMeta, error) {
	if ref.Resource.Computed != nil {
		return listComputed(ctx, ref, opts, each)
	}
	sel, err := newSelection(ref.Resource, opts)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	scope := continuetoken.Scope{Resource: ref.Resource.StorageName, Namespace: ref.Namespace, Namespaced: ref.Resource.Namespaced}
	if scope.Namespace == "" && ref.Resource.Namespaced {
		scope.Namespace = sel.Namespace() // cheaper in storage than as a filter
	}
	plan, err := planList(opts, scope)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	if plan.minRevision > 0 {
		if err := r.WaitForRevision(ctx, plan.minRevision); err != nil {
			return metav1.ListMeta{}, err
		}
	}
	storeOpts := sqlstore.ListOptions{Resource: scope.Resource, Namespace: scope.Namespace, Revision: plan.revision,
		After: plan.after, KnownRemaining: plan.knownRemaining}
	// kube-apiserver serves resourceVersion=0 from its watch cache, which ignores limit, and
	// reads a list whose selector pins one name (in a namespace, or of a cluster-scoped type)
	// as that one key, unpaged.
	singleKey := sel.PinsName() && (ref.Namespace != "" || !ref.Resource.Namespaced)
	if opts.Limit > 0 && opts.ResourceVersion != "0" && !singleKey {
		storeOpts.Limit = opts.Limit
	}
	if !sel.Empty() {
		storeOpts.Filter = sel.Filter()
	}
	var last sqlstore.Key
	result, err := r.store.List(ctx, storeOpts, func(o sqlstore.Object) error {
		last = o.Key
		return each(o)
	})
	if err != nil {
		return metav1.ListMeta{}, listError(err, ref, scope, plan)
	}
	meta := metav1.ListMeta{ResourceVersion: revisionString(result.Revision)}
	if result.More {
		meta.Continue = continuetoken.Encode(scope, continuetoken.Point{Revision: result.Revision, After: last, Remaining: result.Remaining})
		if sel.Empty() && result.Remaining >= 0 {
			meta.RemainingItemCount = &result.Remaining
		}
	}
	return meta, nil
}

// checkPathName refuses a name from a request's path that kube-apiserver's storage cannot make
// a key of: it answers 400 before it reads or writes anything.
func checkPathName(name string) error {
	if msgs := content.IsPathSegmentName(name); len(msgs) > 0 {
		return apierrors.NewBadRequest(fmt.Sprintf("Name parameter invalid: %q: %s", name, strings.Join(msgs, ";")))
	}
	return nil
}

// GetScale reads the autoscaling/v1 Scale of the object ref names (a type with a /scale
// subresource), as opts.ResourceVersion says, as Get does.
func (r *Registry) GetScale(ctx context.Context, ref Ref, opts *metav1.GetOptions) (*autoscalingv1.Scale, error) {
	current, err := r.Get(ctx, ref, opts)
	if err != nil {
		return nil, err
	}
	scale, found, err := scaleOfStored(ref.Resource, current.Value)
	if err != nil {
		return nil, storedobj.ReadFailed(ref.Resource, ref.Namespace, ref.Name, err)
	}
	if !found {
		return nil, apierrors.NewInternalError(fmt.Errorf("the spec replicas field %q does not exist", ref.Resource.Scale.SpecReplicasPath))
	}
	return scale, nil
}

// UpdateScale writes scale's spec.replicas to the object ref names and returns the Scale of the
// object written.
func (r *Registry) UpdateScale(ctx context.Context, ref Ref, scale *autoscalingv1.Scale, opts *metav1.UpdateOptions) (*autoscalingv1.Scale, error) {
	if scale.Name == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s based on URL) was undeterminable: name must be provided", ref.Name))
	}
	if scale.Name != ref.Name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", scale.Name, ref.Name))
	}
	if err := checkPathName(ref.Name); err != nil {
		return nil, err
	}
	req := newRequest(ref, opts.DryRun, "", opts)
	return r.scale(ctx, req, func(live *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
		return fieldmanagers.RecordScaleUpdate(ref.Resource, live, scale, opts.FieldManager)
	})
}

// PatchScale applies a patch to the current Scale of the object ref names, then writes it as
// UpdateScale does, and returns the Scale written with the patch's warnings. An apply is
// server-side apply of a Scale.
func (r *Registry) PatchScale(ctx context.Context, ref Ref, patchType types.PatchType, body []byte, opts *metav1.PatchOptions) (*autoscalingv1.Scale, []string, error) {
	if err := checkPathName(ref.Name); err != nil {
		return nil, nil, err
	}
	p := &patchRequest{patchType: patchType, body: body, opts: opts}
	req := newRequest(ref, opts.DryRun, "", opts)
	scale, err := r.scale(ctx, req, func(live *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
		p.warnings = nil // warnings are those of the last attempt
		if patchType == types.ApplyYAMLPatchType {
			return p.applyScale(ref.Resource, live)
		}
		doc, err := json.Marshal(live)
		if err != nil {
			return nil, err
		}
		patched, err := p.patchScaleJSON(doc)
		if err != nil {
			return nil, err
		}
		scale, err := scales.Decode(patched)
		if _, strict := runtime.AsStrictDecodingError(err); err != nil && !strict {
			return nil, patchInvalid(string(patched), err)
		}
		return fieldmanagers.RecordScaleUpdate(ref.Resource, live, scale, opts.FieldManager)
	})
	return scale, p.warnings, err
}

// scale writes the Scale that change makes of the current one, and returns the Scale of the
// object written.
func (r *Registry) scale(ctx context.Context, req *request, change scaleChange) (*autoscalingv1.Scale, error) {
	stored, err := r.updateScale(ctx, req, change)
	if err != nil {
		return nil, err
	}
	scale, _, err := scaleOfStored(req.res, stored.Value)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return scale, nil
}
