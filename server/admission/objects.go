package admission

import (
	"cmp"
	"fmt"
	"slices"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeadmission "k8s.io/apiserver/pkg/admission"

	"github.com/sqlkube/sqlkube/server/catalog"
	"github.com/sqlkube/sqlkube/server/resource"
)

// objectInterfaces are the ObjectInterfaces of the admission plugins. sqlkube's objects are all
// unstructured; a built-in is served at one version, and a custom resource's versions are
// equivalent resources (kube's matchPolicy Equivalent), which convert by their CRD's conversion
// webhook, or by their apiVersion alone (conversion strategy None).
type objectInterfaces struct{ catalog *catalog.Catalog }

var _ kubeadmission.ObjectInterfaces = objectInterfaces{}

func (o objectInterfaces) GetObjectCreater() runtime.ObjectCreater     { return o }
func (o objectInterfaces) GetObjectTyper() runtime.ObjectTyper         { return o }
func (o objectInterfaces) GetObjectDefaulter() runtime.ObjectDefaulter { return o }
func (o objectInterfaces) GetObjectConvertor() runtime.ObjectConvertor { return o }
func (o objectInterfaces) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper {
	return o
}

func (objectInterfaces) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

func (objectInterfaces) ObjectKinds(obj runtime.Object) ([]schema.GroupVersionKind, bool, error) {
	return []schema.GroupVersionKind{obj.GetObjectKind().GroupVersionKind()}, false, nil
}

func (objectInterfaces) Recognizes(schema.GroupVersionKind) bool { return true }

// Default does nothing: objects were defaulted when decoded.
func (objectInterfaces) Default(runtime.Object) {}

// Convert copies in's content into out, which keeps its apiVersion and kind when it has them;
// a custom resource whose CRD has a conversion webhook is converted by it.
func (o objectInterfaces) Convert(in, out, _ any) error {
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

func (o objectInterfaces) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	gvk, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{in.GetObjectKind().GroupVersionKind()})
	if !ok {
		return nil, fmt.Errorf("cannot convert %v to %v", in.GetObjectKind().GroupVersionKind(), target)
	}
	out, _ := o.New(gvk)
	return out, o.Convert(in, out, nil)
}

func (objectInterfaces) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// EquivalentResourcesFor lists the versions a resource is served at: each served version for a
// custom resource; for a built-in, every group version serving its stored objects (autoscaling
// v1 and v2 HPAs; core and events.k8s.io events), as kube-apiserver's registry of equivalent
// resources keys them by storage.
func (o objectInterfaces) EquivalentResourcesFor(gvr schema.GroupVersionResource, _ string) []schema.GroupVersionResource {
	res, ok := o.catalog.Lookup(gvr.Group, gvr.Version, gvr.Resource)
	if !ok {
		return nil
	}
	if res.Definition == nil {
		return o.builtinEquivalents(res)
	}
	var versions []schema.GroupVersionResource
	for _, v := range res.Definition.Spec.Versions {
		if _, served := o.catalog.Lookup(gvr.Group, v.Name, gvr.Resource); served {
			versions = append(versions, gvr.GroupResource().WithVersion(v.Name))
		}
	}
	return versions
}

// builtinEquivalents lists the built-ins stored as res is, in a stable order.
func (o objectInterfaces) builtinEquivalents(res *resource.Resource) []schema.GroupVersionResource {
	all, _ := o.catalog.Resources()
	var equivalents []schema.GroupVersionResource
	for _, r := range all {
		if r.Definition == nil && r.StorageName == res.StorageName {
			equivalents = append(equivalents, r.GroupResource().WithVersion(r.Version))
		}
	}
	slices.SortFunc(equivalents, func(a, b schema.GroupVersionResource) int {
		return cmp.Compare(a.String(), b.String())
	})
	return equivalents
}

// KindFor is the kind served at a resource; a subresource is admitted with its object's kind,
// but for /scale, an autoscaling/v1 Scale.
func (o objectInterfaces) KindFor(gvr schema.GroupVersionResource, subresource string) schema.GroupVersionKind {
	res, ok := o.catalog.Lookup(gvr.Group, gvr.Version, gvr.Resource)
	switch {
	case !ok:
		return schema.GroupVersionKind{}
	case subresource == "scale":
		return autoscalingv1.SchemeGroupVersion.WithKind("Scale")
	}
	return res.GroupKind().WithVersion(res.Version)
}
