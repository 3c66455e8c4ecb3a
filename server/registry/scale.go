package registry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/sqlkube/sqlkube/server/registry/fieldmanagers"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// scaleDecoder reads autoscaling/v1 Scale request bodies, JSON or YAML, as kube-apiserver's
// typed decoder does: a missing apiVersion and kind default to the Scale's, and unknown or
// duplicate fields come back as a strict decoding error beside the decoded Scale.
var scaleDecoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	if err := autoscalingv1.AddToScheme(scheme); err != nil {
		panic(err) // a static scheme: cannot happen
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}()

// ScalePatchTypes are the patches /scale accepts: a Scale is a Go type, so strategic merge
// patches apply to it even for custom resources.
var ScalePatchTypes = []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.StrategicMergePatchType), string(types.ApplyYAMLPatchType)}

// replicasUnset stands for a spec replicas field missing from the object in the Scale a patch
// is applied to, as apiextensions-apiserver does, so that a patch that does not set it fails.
const replicasUnset = math.MinInt32

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

// DecodeScale decodes a Scale request body; its unknown and duplicate fields are warnings or
// ignored as fieldValidation says. A body that does not decode, or has such fields under
// Strict, is kube-apiserver's errUndecodableScale.
func DecodeScale(body []byte, fieldValidation string) (*autoscalingv1.Scale, []string, error) {
	scale, err := decodeScale(body)
	strictErr, strict := runtime.AsStrictDecodingError(err)
	switch {
	case err == nil || (strict && fieldValidation == metav1.FieldValidationIgnore):
		return scale, nil, nil
	case strict && fieldValidation != metav1.FieldValidationStrict:
		var warnings []string
		for _, e := range strictErr.Errors() {
			warnings = append(warnings, e.Error())
		}
		return scale, warnings, nil
	}
	return nil, nil, errUndecodableScale
}

// decodeScale decodes a Scale in JSON or YAML; a strict decoding error comes with the Scale.
func decodeScale(body []byte) (*autoscalingv1.Scale, error) {
	scale := &autoscalingv1.Scale{}
	defaults := autoscalingv1.SchemeGroupVersion.WithKind("Scale")
	_, _, err := scaleDecoder.Decode(body, &defaults, scale)
	return scale, err
}

// errUndecodableScale is kube-apiserver's 400 for a Scale body that does not decode (another
// apiVersion, a field of the wrong type): to word the decoding error it looks up the Scale's kind
// in the custom resource's scheme, which has no Scale, and answers that lookup's error instead.
var errUndecodableScale = func() error {
	_, _, err := runtime.NewScheme().ObjectKinds(&autoscalingv1.Scale{})
	return apierrors.NewBadRequest(err.Error())
}()

// scaleChange gives the Scale to write from the object's current one (whose spec.replicas is
// replicasUnset when the object has none), with the managedFields of the write recorded by the
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
			return sqlstore.Object{}, storageError(err, req.gr, req.name)
		}
		old, err := DecodeServed(req.res, current.Value)
		if err != nil {
			return sqlstore.Object{}, err
		}
		obj, precondition, err := scaledObject(req, old, revisionString(current.Revision), change)
		if err != nil {
			return sqlstore.Object{}, err
		}
		stored, err := r.applyUpdate(ctx, req, current, fieldmanagers.KeepTimes(ctx, obj, old), replaceAll)
		if errors.Is(err, sqlstore.ErrConflict) && !precondition {
			continue
		}
		if err != nil {
			return sqlstore.Object{}, storageError(err, req.gr, req.name)
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
func scaledObject(req *request, old *unstructured.Unstructured, resourceVersion string, change scaleChange) (obj *unstructured.Unstructured, precondition bool, err error) {
	paths := req.res.Scale
	current, found, err := scaleOf(paths, old)
	if err != nil {
		return nil, false, err
	}
	if !found {
		current.Spec.Replicas = replicasUnset
	}
	handler := managedfields.NewScaleHandler(old.GetManagedFields(), schema.GroupVersion{Group: req.res.Group, Version: req.res.Version}, replicasPaths(req.res.Definition))
	if current.ManagedFields, err = handler.ToSubresource(); err != nil {
		return nil, false, err
	}
	scale, err := change(current)
	if err != nil {
		return nil, false, err
	}
	if scale.Spec.Replicas == replicasUnset {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("the spec replicas field %q cannot be empty", paths.SpecReplicasPath))
	}
	if rv := scale.ResourceVersion; rv != "" && rv != resourceVersion {
		return nil, false, apierrors.NewConflict(req.gr, req.name, errors.New(conflictMessage))
	}
	obj = old.DeepCopy()
	if err := unstructured.SetNestedField(obj.Object, int64(scale.Spec.Replicas), splitFieldPath(paths.SpecReplicasPath)...); err != nil {
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
	obj, err := DecodeServed(res, value)
	if err != nil {
		return nil, false, err
	}
	return scaleOf(res.Scale, obj)
}

// scaleOf is the autoscaling/v1 Scale of obj: missing replicas are 0; found says whether the
// spec replicas field exists. A field of the wrong type is an error.
func scaleOf(paths *resource.ScaleSubresource, obj *unstructured.Unstructured) (scale *autoscalingv1.Scale, found bool, err error) {
	specReplicas, found, err := unstructured.NestedInt64(obj.Object, splitFieldPath(paths.SpecReplicasPath)...)
	if err != nil {
		return nil, false, err
	}
	statusReplicas, _, err := unstructured.NestedInt64(obj.Object, splitFieldPath(paths.StatusReplicasPath)...)
	if err != nil {
		return nil, false, err
	}
	var selector string
	if paths.LabelSelectorPath != "" {
		if selector, _, err = unstructured.NestedString(obj.Object, splitFieldPath(paths.LabelSelectorPath)...); err != nil {
			return nil, false, err
		}
	}
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{APIVersion: autoscalingv1.SchemeGroupVersion.String(), Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              obj.GetName(),
			Namespace:         obj.GetNamespace(),
			UID:               obj.GetUID(),
			ResourceVersion:   obj.GetResourceVersion(),
			CreationTimestamp: obj.GetCreationTimestamp(),
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: int32(specReplicas)},
		Status: autoscalingv1.ScaleStatus{Replicas: int32(statusReplicas), Selector: selector},
	}, found, nil
}

// splitFieldPath splits a CRD's JSON path to a field (".spec.replicas", validation allows
// nothing fancier) into its field names.
func splitFieldPath(path string) []string {
	return strings.Split(strings.TrimPrefix(path, "."), ".")
}

// replicasPaths maps each version of crd to the path of its spec replicas (nil for a version
// without /scale), as kube-apiserver's scale handler is given them.
func replicasPaths(crd *apiextensionsv1.CustomResourceDefinition) managedfields.ResourcePathMappings {
	paths := managedfields.ResourcePathMappings{}
	for _, v := range crd.Spec.Versions {
		gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}.String()
		paths[gv] = nil
		if v.Subresources != nil && v.Subresources.Scale != nil {
			var names []any
			for _, name := range splitFieldPath(v.Subresources.Scale.SpecReplicasPath) {
				names = append(names, name)
			}
			paths[gv] = fieldpath.MakePathOrDie(names...)
		}
	}
	return paths
}

// applyScale applies p, an apply configuration of a Scale, to live by server-side apply, as
// kube-apiserver's /scale field manager does: its manager owns the spec replicas it applies,
// which another manager owning them with another value makes a 409 conflict unless forced.
// kube-apiserver's custom resource converter cannot convert the Scale that an apply changing
// it produces (unstructured, not a Go Scale), so such an apply fails there with a 500, and
// here with the same error: only an apply that leaves the Scale as it is, taking or sharing
// the ownership of its replicas, succeeds.
func (p *patchRequest) applyScale(res *resource.Resource, live *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
	applied, err := p.applyTo(res, "scale", live)
	if err != nil {
		return nil, err
	}
	scale, ok := applied.(*autoscalingv1.Scale)
	if !ok {
		return nil, fmt.Errorf("the scale field manager applied a %T", applied)
	}
	return scale, nil
}
