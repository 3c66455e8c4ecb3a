package admission

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/resource"
)

// objectView is a request's objects as kube's built-in plugins read them, kube's internal Go
// types, converted when a plugin first asks for them: a plugin looks at the resource before the
// object, so a write no plugin acts on (a ConfigMap's) converts nothing. What the plugins change
// is written back to the served object before a plugin reads that (writeBack).
type objectView struct {
	req       *registry.AdmissionRequest
	converter resource.InternalObjects // nil: kube's scheme does not know the kind (custom resources)
	// obj and old are the converted objects, once converted.
	obj, old runtime.Object
	// converted are the attributes of the chain's pass with the view's objects, made once for
	// all the plugins of the pass.
	converted *internalAttributes
}

type viewKey struct{}

// withView is ctx carrying the view of req's objects, for the plugins the chain runs on it.
func withView(ctx context.Context, req *registry.AdmissionRequest) (context.Context, *objectView) {
	view := &objectView{req: req, converter: converterFor(req)}
	return context.WithValue(ctx, viewKey{}, view), view
}

// viewOf is the view ctx carries.
func viewOf(ctx context.Context) *objectView {
	return ctx.Value(viewKey{}).(*objectView)
}

// converterFor converts req's objects: the strategy of a built-in served with kube's rules for
// its own kind, kube's scheme for the other built-in kinds (namespaces, a pod's Binding); none
// for a Scale, which the plugins read as served, nor for custom resources, which kube's plugins
// read as unstructured objects.
func converterFor(req *registry.AdmissionRequest) resource.InternalObjects {
	if req.Subresource == "scale" || req.Resource.Definition != nil {
		return nil
	}
	if converter, ok := req.Resource.Strategy.(resource.InternalObjects); ok && req.Kind == req.Resource.GroupKind().WithVersion(req.Resource.Version) {
		return converter
	}
	if legacyscheme.Scheme.Recognizes(req.Kind) {
		return schemeConverter{kind: req.Kind}
	}
	return nil
}

// attributes are a with the view's objects.
func (v *objectView) attributes(a kubeadmission.Attributes) kubeadmission.Attributes {
	if v.converter == nil {
		return a
	}
	if v.converted == nil || v.converted.Attributes != a {
		v.converted = &internalAttributes{Attributes: a, view: v}
	}
	return v.converted
}

// internalAttributes are a request's attributes with its objects as kube's internal types. The
// rest, audit annotations included, are the request's.
type internalAttributes struct {
	kubeadmission.Attributes
	view *objectView
}

func (a *internalAttributes) GetObject() runtime.Object {
	return a.view.internal(&a.view.obj, a.view.req.Object)
}

func (a *internalAttributes) GetOldObject() runtime.Object {
	return a.view.internal(&a.view.old, a.view.req.OldObject)
}

// internal is served converted, kept in *converted. An object that does not convert is given as
// served: the plugins refuse what they do not expect, and validation what is invalid.
func (v *objectView) internal(converted *runtime.Object, served *unstructured.Unstructured) runtime.Object {
	if served == nil {
		return nil
	}
	if *converted == nil {
		internal, err := v.converter.ToInternal(served)
		if err != nil {
			return served
		}
		*converted = internal
	}
	return *converted
}

// writeBack writes the converted object, which the plugins may have changed, to the served one.
func (v *objectView) writeBack() error {
	if v.obj == nil {
		return nil
	}
	return v.converter.FromInternal(v.obj, v.req.Object)
}

// forget drops the converted objects, after a plugin that may have changed the served ones.
func (v *objectView) forget() {
	v.obj, v.old = nil, nil
}

// schemeConverter converts objects of kind with kube's scheme; what it writes back has the
// kind's defaults, as a strategy's FromInternal does.
type schemeConverter struct{ kind schema.GroupVersionKind }

func (c schemeConverter) ToInternal(obj *unstructured.Unstructured) (runtime.Object, error) {
	versioned, err := legacyscheme.Scheme.New(c.kind)
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, versioned); err != nil {
		return nil, err
	}
	return legacyscheme.Scheme.ConvertToVersion(versioned, schema.GroupVersion{Group: c.kind.Group, Version: runtime.APIVersionInternal})
}

func (c schemeConverter) FromInternal(internal runtime.Object, obj *unstructured.Unstructured) error {
	versioned, err := legacyscheme.Scheme.ConvertToVersion(internal, c.kind.GroupVersion())
	if err != nil {
		return err
	}
	legacyscheme.Scheme.Default(versioned)
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(versioned)
	if err != nil {
		return err
	}
	obj.Object = content
	return nil
}
