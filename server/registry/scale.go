package registry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

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
// patches apply to it even for custom resources. Server-side apply is not supported here.
var ScalePatchTypes = []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.StrategicMergePatchType)}

// replicasUnset stands for a spec replicas field missing from the object in the Scale a patch
// is applied to, as apiextensions-apiserver does, so that a patch that does not set it fails.
const replicasUnset = math.MinInt32

// applyToScale applies the patch to a Scale's JSON.
func (p *patchRequest) applyToScale(doc []byte) ([]byte, error) {
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
// replicasUnset when the object has none).
type scaleChange func(current *autoscalingv1.Scale) (*autoscalingv1.Scale, error)

// updateScale writes the replicas the change asks for through the object's update path. As in
// kube-apiserver, a Scale with a resourceVersion applies only to that version (409 otherwise);
// without, a concurrent write makes it retry against the newer object.
func (r *Registry) updateScale(ctx context.Context, req *request, change scaleChange) (sqlstore.Object, error) {
	// The manager is recorded here, as the scale subresource's; the update path records nothing.
	update := *req
	update.manager = ""
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
		obj = recordSubresourceManagedFields(ctx, req, "scale", obj, old)
		untimeScaleEntries(obj)
		stored, err := r.applyUpdate(ctx, &update, current, obj, replaceAll)
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
// precondition says whether the new Scale named the resourceVersion it applies to.
func scaledObject(req *request, old *unstructured.Unstructured, resourceVersion string, change scaleChange) (obj *unstructured.Unstructured, precondition bool, err error) {
	paths := req.res.Scale
	current, found, err := scaleOf(paths, old)
	if err != nil {
		return nil, false, err
	}
	if !found {
		current.Spec.Replicas = replicasUnset
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

// untimeScaleEntries gives obj's managedFields entries of the scale subresource no time, as
// kube-apiserver's scale handler writes them (it keeps only the times the object's own entries
// had), and orders the entries as kube-apiserver encodes them: by operation, then time (none
// first), manager, apiVersion and subresource.
func untimeScaleEntries(obj *unstructured.Unstructured) {
	entries := obj.GetManagedFields()
	for i := range entries {
		if entries[i].Subresource == "scale" {
			entries[i].Time = nil
		}
	}
	seconds := func(e metav1.ManagedFieldsEntry) int64 {
		if e.Time == nil {
			return 0
		}
		return e.Time.Unix()
	}
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		switch {
		case a.Operation != b.Operation:
			return a.Operation < b.Operation
		case seconds(a) != seconds(b):
			return seconds(a) < seconds(b)
		case a.Manager != b.Manager:
			return a.Manager < b.Manager
		case a.APIVersion != b.APIVersion:
			return a.APIVersion < b.APIVersion
		}
		return a.Subresource < b.Subresource
	})
	obj.SetManagedFields(entries)
}
