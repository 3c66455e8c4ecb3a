package server

import (
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/sqlkube/sqlkube/server/catalog"
)

// admissionObjects are the ObjectInterfaces of the admission chain. sqlkube's objects are all
// unstructured; a built-in is served at one version, and a custom resource's versions are
// equivalent resources (kube's matchPolicy Equivalent), which convert by their CRD's conversion
// webhook, or by their apiVersion alone (conversion strategy None).
type admissionObjects struct{ catalog *catalog.Catalog }

var _ admission.ObjectInterfaces = admissionObjects{}

func (o admissionObjects) GetObjectCreater() runtime.ObjectCreater     { return o }
func (o admissionObjects) GetObjectTyper() runtime.ObjectTyper         { return o }
func (o admissionObjects) GetObjectDefaulter() runtime.ObjectDefaulter { return o }
func (o admissionObjects) GetObjectConvertor() runtime.ObjectConvertor { return o }
func (o admissionObjects) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper {
	return o
}

func (admissionObjects) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

func (admissionObjects) ObjectKinds(obj runtime.Object) ([]schema.GroupVersionKind, bool, error) {
	return []schema.GroupVersionKind{obj.GetObjectKind().GroupVersionKind()}, false, nil
}

func (admissionObjects) Recognizes(schema.GroupVersionKind) bool { return true }

// Default does nothing: objects were defaulted when decoded.
func (admissionObjects) Default(runtime.Object) {}

// Convert copies in's content into out, which keeps its apiVersion and kind when it has them;
// a custom resource whose CRD has a conversion webhook is converted by it.
func (o admissionObjects) Convert(in, out, _ any) error {
	from, ok := in.(*unstructured.Unstructured)
	to, ok2 := out.(*unstructured.Unstructured)
	if !ok || !ok2 {
		return fmt.Errorf("cannot convert %T to %T", in, out)
	}
	gvk := to.GroupVersionKind()
	if res, ok := o.catalog.ResourceForKind(gvk.GroupVersion().String(), gvk.Kind); ok && res.Converter != nil && from.GetAPIVersion() != res.APIVersion() {
		converted, err := res.Convert(from.DeepCopy(), gvk.Version)
		if err != nil {
			return err
		}
		to.Object = converted.Object
		return nil
	}
	to.Object = runtime.DeepCopyJSON(from.Object)
	if !gvk.Empty() {
		to.SetGroupVersionKind(gvk)
	}
	return nil
}

func (o admissionObjects) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	gvk, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{in.GetObjectKind().GroupVersionKind()})
	if !ok {
		return nil, fmt.Errorf("cannot convert %v to %v", in.GetObjectKind().GroupVersionKind(), target)
	}
	out, _ := o.New(gvk)
	return out, o.Convert(in, out, nil)
}

func (admissionObjects) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// EquivalentResourcesFor lists the versions a resource is served at: one for a built-in, each
// served version for a custom resource.
func (o admissionObjects) EquivalentResourcesFor(gvr schema.GroupVersionResource, _ string) []schema.GroupVersionResource {
	res, ok := o.catalog.Lookup(gvr.Group, gvr.Version, gvr.Resource)
	if !ok {
		return nil
	}
	if res.Definition == nil {
		return []schema.GroupVersionResource{gvr}
	}
	var versions []schema.GroupVersionResource
	for _, v := range res.Definition.Spec.Versions {
		if _, served := o.catalog.Lookup(gvr.Group, v.Name, gvr.Resource); served {
			versions = append(versions, gvr.GroupResource().WithVersion(v.Name))
		}
	}
	return versions
}

// KindFor is the kind served at a resource; a subresource is admitted with its object's kind,
// but for /scale, an autoscaling/v1 Scale.
func (o admissionObjects) KindFor(gvr schema.GroupVersionResource, subresource string) schema.GroupVersionKind {
	res, ok := o.catalog.Lookup(gvr.Group, gvr.Version, gvr.Resource)
	switch {
	case !ok:
		return schema.GroupVersionKind{}
	case subresource == "scale":
		return autoscalingv1.SchemeGroupVersion.WithKind("Scale")
	}
	return res.GroupKind().WithVersion(res.Version)
}
