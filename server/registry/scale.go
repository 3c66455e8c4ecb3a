package registry

import (
	"context"
	"errors"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/sqlkube/sqlkube/server/registry/fieldmanagers"
	"github.com/sqlkube/sqlkube/server/registry/scales"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// patchScaleJSON applies a JSON, merge or strategic merge patch to a Scale's JSON.
func (p *patchRequest) patchScaleJSON(doc []byte) ([]byte, error) {
	if p.patchType != types.StrategicMergePatchType {
		patched, _, err := p.applyJSON(doc)
		return patched, err
	}
	patched, err := strategicpatch.StrategicMergePatch(doc, p.body, autoscalingv1.Scale{})
	if err != nil {
		return nil, strategicMergeError(err)
	}
	return patched, nil
}

// scaleChange gives the Scale to write from the object's current one (whose spec.replicas is
// scales.ReplicasUnset when the object has none), with the managedFields of the write recorded by the
// /scale field manager (see recordScaleUpdate and patchRequest.applyScale).
type scaleChange func(current *autoscalingv1.Scale) (*autoscalingv1.Scale, error)

// updateScale writes the replicas the change asks for through the object's update path (req
// has no manager: the change records the write's managedFields). As in kube-apiserver, a Scale
// with a resourceVersion applies only to that version (409 otherwise); without, a concurrent
// write makes it retry against the newer object.
func (r *Registry) updateScale(ctx context.Context, req *request, change scaleChange) (sqlstore.Object, error) {
	for {
		current, err := r.store.Get(ctx, req.key())
		if err != nil {
			return sqlstore.Object{}, storedobj.StorageError(err, req.gr, req.name)
		}
		old, err := storedobj.DecodeServed(req.res, current.Value)
		if err != nil {
			return sqlstore.Object{}, err
		}
		obj, precondition, err := scaledObject(ctx, req, old, revisionString(current.Revision), change)
		if err != nil {
			return sqlstore.Object{}, err
		}
		stored, err := r.applyUpdate(ctx, req, current, old, fieldmanagers.KeepTimes(ctx, obj, old), replaceAll)
		if errors.Is(err, sqlstore.ErrConflict) && !precondition {
			continue
		}
		if err != nil {
			return sqlstore.Object{}, storedobj.StorageError(err, req.gr, req.name)
		}
		return stored, nil
	}
}

// scaledObject is old, at resourceVersion, with the spec replicas the change asks for;
// precondition says whether the new Scale named the resourceVersion it applies to. As in
// kube-apiserver, the Scale the change sees carries the managedFields entries of old that own
// the spec replicas, and its managedFields are merged back into old's by the scale handler:
// a manager that wrote the replicas through the object and writes the Scale has them moved
// to an entry of its own in the Scale's version.
func scaledObject(ctx context.Context, req *request, old *unstructured.Unstructured, resourceVersion string, change scaleChange) (obj *unstructured.Unstructured, precondition bool, err error) {
	paths := req.res.Scale
	current, found, err := scales.Of(paths, old)
	if err != nil {
		return nil, false, err
	}
	if !found {
		current.Spec.Replicas = scales.ReplicasUnset
	}
	handler := managedfields.NewScaleHandler(old.GetManagedFields(), schema.GroupVersion{Group: req.res.Group, Version: req.res.Version}, scales.ReplicasPaths(req.res))
	if current.ManagedFields, err = handler.ToSubresource(); err != nil {
		return nil, false, err
	}
	scale, err := change(current)
	if err != nil {
		return nil, false, err
	}
	if scale.Spec.Replicas == scales.ReplicasUnset {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("the spec replicas field %q cannot be empty", paths.SpecReplicasPath))
	}
	if validator, ok := req.res.Strategy.(resource.ScaleValidator); ok {
		if errs := validator.ValidateScale(ctx, scale, current); len(errs) > 0 {
			return nil, false, apierrors.NewInvalid(schema.GroupKind{Group: autoscalingv1.GroupName, Kind: "Scale"}, req.name, errs)
		}
	}
	if rv := scale.ResourceVersion; rv != "" && rv != resourceVersion {
		return nil, false, apierrors.NewConflict(req.gr, req.name, errors.New(storedobj.ConflictMessage))
	}
	obj = old.DeepCopy()
	if err := unstructured.SetNestedField(obj.Object, int64(scale.Spec.Replicas), scales.FieldPath(paths.SpecReplicasPath)...); err != nil {
		return nil, false, apierrors.NewBadRequest(err.Error())
	}
	entries, err := handler.ToParent(scale.ManagedFields)
	if err != nil {
		return nil, false, err
	}
	obj.SetManagedFields(entries)
	return obj, scale.ResourceVersion != "", nil
}

// scaleOfStored is the Scale of a stored object, as served through res.
func scaleOfStored(res *resource.Resource, value []byte) (*autoscalingv1.Scale, bool, error) {
	obj, err := storedobj.DecodeServed(res, value)
	if err != nil {
		return nil, false, err
	}
	return scales.Of(res.Scale, obj)
}

// applyScale applies p, an apply configuration of a Scale, to live by server-side apply, as
// kube-apiserver's /scale field manager does: its manager owns the spec replicas it applies,
// which another manager owning them with another value makes a 409 conflict unless forced.
// An apply that changes the Scale produces it unstructured. A built-in's is converted to the
// Go Scale, as kube's scheme converts it; kube-apiserver's custom resource converter cannot
// convert it, so such an apply fails there with a 500, and here with the same error: for a
// custom resource only an apply that leaves the Scale as it is, taking or sharing the
// ownership of its replicas, succeeds.
func (p *patchRequest) applyScale(res *resource.Resource, live *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
	applied, err := p.applyTo(res, "scale", live)
	if err != nil {
		return nil, err
	}
	switch applied := applied.(type) {
	case *autoscalingv1.Scale:
		return applied, nil
	case *unstructured.Unstructured:
		if res.CRDName == "" {
			scale := &autoscalingv1.Scale{}
			err := runtime.DefaultUnstructuredConverter.FromUnstructured(applied.Object, scale)
			return scale, err
		}
	}
	return nil, fmt.Errorf("the scale field manager applied a %T", applied)
}
