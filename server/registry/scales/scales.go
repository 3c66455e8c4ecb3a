// Package scales reads and writes the autoscaling/v1 Scale of the objects of types with a
// /scale subresource, as kube-apiserver's scale subresource does: request bodies, the Scale of
// an object by its type's paths, and the paths the /scale field manager maps.
package scales

import (
	"math"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/sqlkube/sqlkube/server/resource"
)

// decoder reads autoscaling/v1 Scale request bodies, JSON or YAML, as kube-apiserver's
// typed decoder does: a missing apiVersion and kind default to the Scale's, and unknown or
// duplicate fields come back as a strict decoding error beside the decoded Scale.
var decoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	if err := autoscalingv1.AddToScheme(scheme); err != nil {
		panic(err) // a static scheme: cannot happen
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}()

// PatchTypes are the patches /scale accepts: a Scale is a Go type, so strategic merge
// patches apply to it even for custom resources.
var PatchTypes = []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.StrategicMergePatchType), string(types.ApplyYAMLPatchType)}

// ReplicasUnset stands for a spec replicas field missing from the object in the Scale a patch
// is applied to, as apiextensions-apiserver does, so that a patch that does not set it fails.
const ReplicasUnset = math.MinInt32

// DecodeBody decodes a Scale request body; its unknown and duplicate fields are warnings or
// ignored as fieldValidation says. A body that does not decode, or has such fields under
// Strict, is kube-apiserver's errUndecodable.
func DecodeBody(body []byte, fieldValidation string) (*autoscalingv1.Scale, []string, error) {
	scale, err := Decode(body)
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
	return nil, nil, errUndecodable
}

// Decode decodes a Scale in JSON or YAML; a strict decoding error comes with the Scale.
func Decode(body []byte) (*autoscalingv1.Scale, error) {
	scale := &autoscalingv1.Scale{}
	defaults := autoscalingv1.SchemeGroupVersion.WithKind("Scale")
	_, _, err := decoder.Decode(body, &defaults, scale)
	return scale, err
}

// errUndecodable is kube-apiserver's 400 for a Scale body that does not decode (another
// apiVersion, a field of the wrong type): to word the decoding error it looks up the Scale's kind
// in the custom resource's scheme, which has no Scale, and answers that lookup's error instead.
var errUndecodable = func() error {
	_, _, err := runtime.NewScheme().ObjectKinds(&autoscalingv1.Scale{})
	return apierrors.NewBadRequest(err.Error())
}()

// Of is the autoscaling/v1 Scale of obj: missing replicas are 0; found says whether the
// spec replicas field exists. A field of the wrong type is an error.
func Of(paths *resource.ScaleSubresource, obj *unstructured.Unstructured) (scale *autoscalingv1.Scale, found bool, err error) {
	specReplicas, found, err := unstructured.NestedInt64(obj.Object, FieldPath(paths.SpecReplicasPath)...)
	if err != nil {
		return nil, false, err
	}
	statusReplicas, _, err := unstructured.NestedInt64(obj.Object, FieldPath(paths.StatusReplicasPath)...)
	if err != nil {
		return nil, false, err
	}
	selector, err := selectorOf(paths, obj)
	if err != nil {
		return nil, false, err
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

// selectorOf is the Scale's status.selector of obj: the string at the label selector path, or
// the string form of the label selector (or label map) there (see ScaleSubresource).
func selectorOf(paths *resource.ScaleSubresource, obj *unstructured.Unstructured) (string, error) {
	switch {
	case paths.LabelSelectorPath == "":
		return "", nil
	case paths.MapSelector:
		set, _, err := unstructured.NestedStringMap(obj.Object, FieldPath(paths.LabelSelectorPath)...)
		return labels.SelectorFromSet(set).String(), err
	case !paths.StructuredSelector:
		selector, _, err := unstructured.NestedString(obj.Object, FieldPath(paths.LabelSelectorPath)...)
		return selector, err
	}
	content, found, err := unstructured.NestedMap(obj.Object, FieldPath(paths.LabelSelectorPath)...)
	if err != nil || !found {
		return "", err
	}
	var labelSelector metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, &labelSelector); err != nil {
		return "", err
	}
	selector, err := metav1.LabelSelectorAsSelector(&labelSelector)
	if err != nil {
		return "", err
	}
	return selector.String(), nil
}

// FieldPath splits a CRD's JSON path to a field (".spec.replicas", validation allows
// nothing fancier) into its field names.
func FieldPath(path string) []string {
	return strings.Split(strings.TrimPrefix(path, "."), ".")
}

// ReplicasPaths maps each version of res's type to the path of its spec replicas (nil for a
// version without /scale), as kube-apiserver's scale handler is given them: a custom
// resource's from its CRD, a built-in's (served in one version) from res.
func ReplicasPaths(res *resource.Resource) managedfields.ResourcePathMappings {
	if res.Definition == nil {
		return managedfields.ResourcePathMappings{res.APIVersion(): fieldPathOf(res.Scale.SpecReplicasPath)}
	}
	return crdReplicasPaths(res.Definition)
}

func crdReplicasPaths(crd *apiextensionsv1.CustomResourceDefinition) managedfields.ResourcePathMappings {
	paths := managedfields.ResourcePathMappings{}
	for _, v := range crd.Spec.Versions {
		gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}.String()
		paths[gv] = nil
		if v.Subresources != nil && v.Subresources.Scale != nil {
			paths[gv] = fieldPathOf(v.Subresources.Scale.SpecReplicasPath)
		}
	}
	return paths
}

// fieldPathOf is a JSON path to a field (see FieldPath) as a managed fields path.
func fieldPathOf(path string) fieldpath.Path {
	var names []any
	for _, name := range FieldPath(path) {
		names = append(names, name)
	}
	return fieldpath.MakePathOrDie(names...)
}
