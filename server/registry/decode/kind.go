package decode

import (
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"sigs.k8s.io/yaml"
)

// Kind reads body (JSON, or YAML when isYAML) as T, the Go type of the built-in kind want, as
// kube-apiserver's decoder reads the body of a subresource that takes a kind of its own (a
// pod's Binding or Eviction): a body that does not decode, or whose kind kube's scheme cannot
// convert to want's, is kube's 400.
func Kind[T any, PT interface {
	*T
	runtime.Object
}](body []byte, isYAML bool, want schema.GroupVersionKind) (*T, error) {
	into := new(T)
	unmarshal := json.Unmarshal
	if isYAML {
		unmarshal = func(data []byte, v any) error { return yaml.Unmarshal(data, v) }
	}
	if err := unmarshal(body, into); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", want.Kind, want.Version, want.Kind, err))
	}
	if err := checkBodyKind(PT(into).GetObjectKind().GroupVersionKind(), want); err != nil {
		return nil, err
	}
	return into, nil
}

// checkBodyKind refuses a body of a kind (gvk, defaulted from want where it names none) that
// kube-apiserver's decoder cannot read as want, with its 400: that decoder makes the body's type
// from kube's scheme and converts it to want's internal type, so another kind fails as not
// registered in its version or as a conversion kube does not have (a v1beta1 Eviction converts).
func checkBodyKind(gvk, want schema.GroupVersionKind) error {
	if gvk.Kind == "" {
		gvk.Kind = want.Kind
	}
	if gvk.GroupVersion().Empty() {
		gvk.Group, gvk.Version = want.Group, want.Version
	}
	if err := convertsTo(gvk, want.GroupKind()); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, want.Kind, err))
	}
	return nil
}

// convertsTo is nil if kube's scheme converts an object of kind gvk to the internal type of
// kind, or the scheme's error, naming the scheme as kube-apiserver's binary names it.
func convertsTo(gvk schema.GroupVersionKind, kind schema.GroupKind) error {
	versioned, err := legacyscheme.Scheme.New(gvk)
	if err != nil {
		return runtime.NewNotRegisteredErrForKind(LegacySchemeName, gvk)
	}
	internal, err := legacyscheme.Scheme.New(kind.WithVersion(runtime.APIVersionInternal))
	if err != nil {
		return err
	}
	return legacyscheme.Scheme.Convert(versioned, internal, nil)
}
