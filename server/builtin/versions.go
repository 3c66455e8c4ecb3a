package builtin

import (
	"fmt"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"github.com/sqlkube/sqlkube/server/resource"
)

// storedAs is the description of a built-in served in a version (or group) other than the one
// its objects are stored in, as kube-apiserver stores autoscaling/v1 HorizontalPodAutoscalers
// as autoscaling/v2 and events.k8s.io/v1 events as core v1 events: objects are converted
// between the two with kube's scheme (kubeConverter).
func storedAs(stored schema.GroupVersion) func(*resource.Resource) {
	return func(r *resource.Resource) {
		r.StorageVersion = stored.Version
		r.StorageGroup, r.StoredInOtherGroup = stored.Group, stored.Group != r.Group
		r.StorageName = StorageName(r.Name, stored.Group)
		r.Converter = kubeConverter{hub: internalKind(r)}
	}
}

// internalKind is the internal kind of kube's scheme r's objects convert through: that of the
// group they are stored in (events.k8s.io events convert through core's internal Event).
func internalKind(r *resource.Resource) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: r.StorageGroupVersion().Group, Version: runtime.APIVersionInternal, Kind: r.Kind}
}

// kubeConverter converts unstructured objects of one built-in type between the versions (and
// groups) it is served in as kube-apiserver's codecs do: decoded as the Go type of their
// version (with its defaults), converted to the internal type hub, then to the target
// version's Go type.
type kubeConverter struct{ hub schema.GroupVersionKind }

var _ runtime.ObjectConvertor = kubeConverter{}

func (c kubeConverter) Convert(in, out, _ any) error {
	return fmt.Errorf("converting %T into %T is not supported", in, out)
}

// ConvertToVersion returns a converted copy of in, an *unstructured.Unstructured, or in itself
// when it is in target's version already. target is a schema.GroupVersion, in which in's kind
// is served (events are served as core v1 and events.k8s.io/v1 Events).
func (c kubeConverter) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("converting %T: only unstructured objects are supported", in)
	}
	from := u.GroupVersionKind()
	gv, ok := target.(schema.GroupVersion)
	if !ok {
		return nil, fmt.Errorf("converting %v: the target must be a group version, not %v", from, target)
	}
	to := gv.WithKind(from.Kind)
	if to == from {
		return u, nil
	}
	internal, err := c.toInternal(u)
	if err != nil {
		return nil, err
	}
	out, err := legacyscheme.Scheme.New(to)
	if err != nil {
		return nil, err
	}
	if err := legacyscheme.Scheme.Convert(internal, out, nil); err != nil {
		return nil, err
	}
	content, err := convertedContent(out)
	if err != nil {
		return nil, err
	}
	converted := &unstructured.Unstructured{Object: content}
	converted.SetGroupVersionKind(to)
	return converted, nil
}

// toInternal decodes u as the Go type of its own version, with that version's defaults (as
// kube-apiserver's storage decoder does), and converts it to the internal type hub.
func (c kubeConverter) toInternal(u *unstructured.Unstructured) (runtime.Object, error) {
	from := u.GroupVersionKind()
	versioned, err := legacyscheme.Scheme.New(from)
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, versioned); err != nil {
		return nil, fmt.Errorf("converting %s %q: %w", from.Kind, u.GetName(), err)
	}
	legacyscheme.Scheme.Default(versioned)
	internal, err := legacyscheme.Scheme.New(c.hub)
	if err != nil {
		return nil, err
	}
	if err := legacyscheme.Scheme.Convert(versioned, internal, nil); err != nil {
		return nil, err
	}
	return internal, nil
}

// contentConverters caches contentConverter by Go type: it walks the type.
var contentConverters sync.Map // reflect.Type → func(any) (map[string]any, error)

// convertedContent is typed's unstructured content, as contentConverter makes it for its type.
func convertedContent(typed runtime.Object) (map[string]any, error) {
	t := reflect.TypeOf(typed).Elem()
	convert, ok := contentConverters.Load(t)
	if !ok {
		convert, _ = contentConverters.LoadOrStore(t, contentConverter(t))
	}
	return convert.(func(any) (map[string]any, error))(typed)
}

func (kubeConverter) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}
