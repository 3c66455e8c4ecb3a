// Package fieldmanagers tracks field ownership (metadata.managedFields) as kube-apiserver's
// field managers do: one FieldManager per served resource and subresource, reading built-ins
// with their generated schemas and custom resources with their CRD's, that records the fields
// a write changes and applies server-side apply configurations.
package fieldmanagers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/sqlkube/sqlkube/server/crdschema"
	"github.com/sqlkube/sqlkube/server/kubeopenapi"
	"github.com/sqlkube/sqlkube/server/resource"
)

// Record records in obj's managedFields what a create (old nil) or an update of old to obj
// through subresource ("" for the object itself) of res changes, owned by manager, as
// kube-apiserver's create and update handlers do before the type's strategy runs. It returns
// the object recorded, obj itself or a copy.
func Record(ctx context.Context, res *resource.Resource, subresource, manager string, obj, old *unstructured.Unstructured) *unstructured.Unstructured {
	fm, err := For(res, subresource)
	if err != nil {
		return obj // the type's schema cannot track fields; kube-apiserver would not serve it
	}
	live := old
	if live == nil {
		live = EmptyObjectOf(res, obj.GroupVersionKind())
	}
	updated, ok := fm.UpdateNoErrors(live, managedFieldsView{obj}, manager).(managedFieldsView)
	switch {
	case !ok:
		return obj // not reached: Update returns the object it is given
	case old == nil:
		return updated.Unstructured
	}
	return KeepTimes(ctx, updated.Unstructured, old)
}

// managedFieldsView is an object as a field manager's Update sees it: the object itself, but
// setting managedFields without Unstructured.SetManagedFields' reflective conversion and deep
// copy, which cost a write several µs.
type managedFieldsView struct{ *unstructured.Unstructured }

func (o managedFieldsView) SetManagedFields(entries []metav1.ManagedFieldsEntry) {
	metadata, ok := o.Object["metadata"].(map[string]any)
	if !ok || entries == nil {
		o.Unstructured.SetManagedFields(entries)
		return
	}
	items := make([]any, len(entries))
	for i := range entries {
		item, ok := managedFieldsEntryContent(&entries[i])
		if !ok {
			o.Unstructured.SetManagedFields(entries)
			return
		}
		items[i] = item
	}
	metadata["managedFields"] = items
}

// managedFieldsEntryContent is e in unstructured form, as runtime.DefaultUnstructuredConverter
// makes it (omitting empty fields), for the entries field managers make, whose fieldsV1 is a
// JSON object; false for others.
func managedFieldsEntryContent(e *metav1.ManagedFieldsEntry) (map[string]any, bool) {
	content := make(map[string]any, 7)
	set := func(key, value string) {
		if value != "" {
			content[key] = value
		}
	}
	set("manager", e.Manager)
	set("operation", string(e.Operation))
	set("apiVersion", e.APIVersion)
	if e.Time != nil {
		content["time"] = e.Time.ToUnstructured()
	}
	set("fieldsType", e.FieldsType)
	if e.FieldsV1 != nil {
		var fields map[string]any
		if !bytes.HasPrefix(e.FieldsV1.Raw, []byte("{")) || json.Unmarshal(e.FieldsV1.Raw, &fields) != nil {
			return nil, false
		}
		content["fieldsV1"] = fields
	}
	set("subresource", e.Subresource)
	return content, true
}

// KeepTimes keeps old's managedFields times in obj when nothing else changed, so that a write
// changing nothing stores nothing.
func KeepTimes(ctx context.Context, obj, old *unstructured.Unstructured) *unstructured.Unstructured {
	kept, err := fieldmanager.IgnoreManagedFieldsTimestampsTransformer(ctx, obj, old)
	if u, ok := kept.(*unstructured.Unstructured); ok && err == nil {
		return u
	}
	return obj
}

// NewEmptyObject is an object of gvk with nothing else set, which a create's or an apply's
// managedFields are recorded against.
func NewEmptyObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	return u
}

// EmptyObjectOf is the object a create's or an apply's managedFields are recorded against
// for res, in the version gvk: NewEmptyObject, or the empty object its strategy makes.
func EmptyObjectOf(res *resource.Resource, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	if strategy, ok := res.Strategy.(resource.EmptyObjecter); ok {
		return strategy.NewEmpty()
	}
	return NewEmptyObject(gvk)
}

// fieldManagerCache holds one FieldManager per served resource and subresource, rebuilt when
// the resource changes (a CRD update replaces its Resources).
var fieldManagerCache = struct {
	sync.Mutex
	entries map[fieldManagerKey]fieldManagerEntry
}{entries: map[fieldManagerKey]fieldManagerEntry{}}

// fieldManagerKey names a served resource and subresource without building a string per write.
type fieldManagerKey struct{ group, version, name, subresource string }

type fieldManagerEntry struct {
	res *resource.Resource
	fm  *managedfields.FieldManager
}

// For is the FieldManager of writes to res through subresource ("" for the object itself,
// "scale" for a custom resource's /scale), made once per resource and subresource.
func For(res *resource.Resource, subresource string) (*managedfields.FieldManager, error) {
	key := fieldManagerKey{res.Group, res.Version, res.Name, subresource}
	fieldManagerCache.Lock()
	defer fieldManagerCache.Unlock()
	if e, ok := fieldManagerCache.entries[key]; ok && e.res == res {
		return e.fm, nil
	}
	fm, err := newFieldManager(res, subresource)
	if err != nil {
		return nil, err
	}
	fieldManagerCache.entries[key] = fieldManagerEntry{res: res, fm: fm}
	return fm, nil
}

func newFieldManager(res *resource.Resource, subresource string) (*managedfields.FieldManager, error) {
	if subresource == "scale" {
		return newScaleFieldManager(res)
	}
	gvk := schema.GroupVersionKind{Group: res.Group, Version: res.Version, Kind: res.Kind}
	// As in kube-apiserver for custom resources, the served version is the hub: custom
	// resources convert by apiVersion alone, and the built-ins served in several versions
	// convert from any version to any other with kube's scheme (res.Converter).
	hub := gvk.GroupVersion()
	resetFields := fieldpath.NewExcludeFilterSetMap(resetFieldsOf(res, subresource))
	if res.Definition == nil {
		typed, _ := res.Strategy.(resource.Defaulter)
		var convertor runtime.ObjectConvertor = apiVersionConvertor{}
		if res.Converter != nil {
			convertor = viewConvertor{res.Converter}
		}
		typeConverter, err := kubeopenapi.TypeConverter()
		if err != nil {
			return nil, err
		}
		return managedfields.NewDefaultFieldManager(typeConverter, convertor, objectDefaulter{typed: typed}, objectCreater{res},
			gvk, hub, subresource, resetFields)
	}
	return managedfields.NewDefaultCRDFieldManager(customResourceTypeConverter(res.Definition), apiVersionConvertor{}, objectDefaulter{schema: res.Schema}, objectCreater{},
		gvk, hub, subresource, resetFields)
}

// newScaleFieldManager is the field manager of writes to a type's /scale, as kube-apiserver's:
// it tracks Go autoscaling/v1 Scales, converting a custom resource's with
// apiextensions-apiserver's converter of the custom resource. A built-in's Scales are only
// ever autoscaling/v1, which is then the hub.
func newScaleFieldManager(res *resource.Resource) (*managedfields.FieldManager, error) {
	typeConverter, err := scaleTypeConverter()
	if err != nil {
		return nil, err
	}
	scaleKind := autoscalingv1.SchemeGroupVersion.WithKind("Scale")
	if res.Definition == nil {
		return managedfields.NewDefaultFieldManager(typeConverter, sameVersionConvertor{}, objectDefaulter{}, objectCreater{},
			scaleKind, autoscalingv1.SchemeGroupVersion, "scale", nil)
	}
	converter, err := customResourceConverter(res.Definition)
	if err != nil {
		return nil, err
	}
	return managedfields.NewDefaultCRDFieldManager(typeConverter, converter, objectDefaulter{}, objectCreater{},
		scaleKind, schema.GroupVersion{Group: res.Group, Version: res.Version}, "scale", nil)
}

// sameVersionConvertor "converts" objects to the version they are in, the only one a built-in's
// /scale field manager asks for.
type sameVersionConvertor struct{}

func (sameVersionConvertor) Convert(in, out, _ any) error {
	return fmt.Errorf("converting %T into %T is not supported", in, out)
}

func (sameVersionConvertor) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	gvk := in.GetObjectKind().GroupVersionKind()
	if kind, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{gvk}); !ok || kind != gvk {
		return nil, fmt.Errorf("%v cannot be converted to %v", gvk, target)
	}
	return in, nil
}

func (sameVersionConvertor) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// scaleTypeConverter reads autoscaling/v1 Scales by the OpenAPI schema generated for
// kube-apiserver, which custom resources' type converters start from, with the Scale's kind.
var scaleTypeConverter = sync.OnceValues(func() (managedfields.TypeConverter, error) {
	schemas := maps.Clone(metaSchemas())
	name := autoscalingv1.Scale{}.OpenAPIModelName()
	scale := *schemas[name]
	scale.Extensions = maps.Clone(scale.Extensions)
	scale.AddExtension("x-kubernetes-group-version-kind", []any{map[string]any{"group": "autoscaling", "version": "v1", "kind": "Scale"}})
	schemas[name] = &scale
	return managedfields.NewTypeConverter(schemas, false)
})

// converterFactory makes apiextensions-apiserver's converters of custom resources.
var converterFactory = sync.OnceValues(func() (*conversion.CRConverterFactory, error) {
	return conversion.NewCRConverterFactory(nil, nil)
})

// customResourceConverter is apiextensions-apiserver's converter of crd's objects, as the /scale
// field manager uses it: for Scales, which it converts as Go types, never by a webhook, so it
// is made for conversion strategy None.
func customResourceConverter(crd *apiextensionsv1.CustomResourceDefinition) (runtime.ObjectConvertor, error) {
	factory, err := converterFactory()
	if err != nil {
		return nil, err
	}
	crd = crd.DeepCopy()
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	converter, _, err := factory.NewConverter(crd)
	return converter, err
}

// resetFieldsOf are the fields a write through subresource cannot set, which its manager
// therefore does not own: as kube-apiserver's strategies say, the status for the object
// itself of a type with a /status, and the spec (and a custom resource's metadata) for /status;
// a type served with kube's strategy says it itself.
func resetFieldsOf(res *resource.Resource, subresource string) map[fieldpath.APIVersion]*fieldpath.Set {
	if strategy, ok := res.Strategy.(resource.ResetFielder); ok {
		return strategy.ResetFields(subresource)
	}
	var paths []string
	switch {
	case subresource == "" && res.Status:
		paths = []string{"status"}
	case subresource == "status" && res.Definition != nil:
		paths = []string{"metadata", "spec"}
	case subresource == "status":
		paths = []string{"spec"}
	default:
		return nil
	}
	set := fieldpath.NewSet()
	for _, p := range paths {
		set.Insert(fieldpath.MakePathOrDie(p))
	}
	return map[fieldpath.APIVersion]*fieldpath.Set{fieldpath.APIVersion(res.APIVersion()): set}
}

// customResourceTypeConverter reads a CRD's objects with the schemas of all its versions, as
// kube-apiserver builds them; a CRD whose schemas do not convert gets the deduced type
// (everything atomic), as there.
func customResourceTypeConverter(crd *apiextensionsv1.CustomResourceDefinition) managedfields.TypeConverter {
	specs := []*spec3.OpenAPI{{Components: &spec3.Components{Schemas: metaSchemas()}}}
	for _, v := range crd.Spec.Versions {
		s, err := builder.BuildOpenAPIV3(crd, v.Name, builder.Options{})
		if err != nil {
			return managedfields.NewDeducedTypeConverter()
		}
		specs = append(specs, s)
	}
	merged, err := builder.MergeSpecsV3(specs...)
	if err != nil {
		return managedfields.NewDeducedTypeConverter()
	}
	tc, err := managedfields.NewTypeConverter(merged.Components.Schemas, crd.Spec.PreserveUnknownFields)
	if err != nil {
		return managedfields.NewDeducedTypeConverter()
	}
	return tc
}

// metaSchemas are the OpenAPI schemas of the types custom resources refer to (ObjectMeta and
// what it holds), as generated for kube-apiserver.
var metaSchemas = sync.OnceValue(func() map[string]*spec.Schema {
	ref := func(name string) spec.Ref { return spec.MustCreateRef("#/components/schemas/" + name) }
	defs := generatedopenapi.GetOpenAPIDefinitions(ref)
	schemas := make(map[string]*spec.Schema, len(defs))
	for name, def := range defs {
		schemas[name] = &def.Schema
	}
	return schemas
})

// apiVersionConvertor converts the unstructured objects the field managers handle between the
// versions of one type, which differ only in apiVersion (the built-ins are served in one
// version, and CRDs convert with strategy None).
type apiVersionConvertor struct{}

func (apiVersionConvertor) Convert(in, out, _ any) error {
	return fmt.Errorf("converting %T into %T is not supported", in, out)
}

func (apiVersionConvertor) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	if view, ok := in.(managedFieldsView); ok {
		in = view.Unstructured
	}
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("converting %T: only unstructured objects are supported", in)
	}
	kind, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{u.GroupVersionKind()})
	if !ok {
		return nil, fmt.Errorf("%v cannot be converted to %v", u.GroupVersionKind(), target)
	}
	if kind == u.GroupVersionKind() {
		return u, nil // the field managers only read what they convert, or own it
	}
	out := u.DeepCopy()
	out.SetGroupVersionKind(kind)
	return out, nil
}

func (apiVersionConvertor) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// viewConvertor converts the objects field managers handle with a built-in's converter, which
// converts unstructured objects: the managedFieldsView the field manager is given among them.
type viewConvertor struct{ runtime.ObjectConvertor }

func (c viewConvertor) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	if view, ok := in.(managedFieldsView); ok {
		in = view.Unstructured
	}
	return c.ObjectConvertor.ConvertToVersion(in, target)
}

// objectDefaulter defaults the result of an apply: a custom resource by its schema, as
// decoding does; a built-in served with kube's rules by kube's scheme (its strategy is a
// resource.Defaulter). Other built-ins have nothing defaulted beyond what their strategy's Decode
// does.
type objectDefaulter struct {
	schema *crdschema.Schema
	typed  resource.Defaulter
}

func (d objectDefaulter) Default(obj runtime.Object) {
	u, ok := obj.(*unstructured.Unstructured)
	switch {
	case !ok:
	case d.schema != nil:
		d.schema.Default(u)
	case d.typed != nil:
		d.typed.Default(u)
	}
}

// objectCreater makes the empty objects the field managers start from: res's own (see
// EmptyObjectOf) when set.
type objectCreater struct{ res *resource.Resource }

func (c objectCreater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	if c.res != nil {
		return EmptyObjectOf(c.res, gvk), nil
	}
	return NewEmptyObject(gvk), nil
}

// RecordScaleUpdate is scale with the update of live to it by manager recorded in its
// managedFields, as kube-apiserver's /scale field manager records it.
func RecordScaleUpdate(res *resource.Resource, live, scale *autoscalingv1.Scale, manager string) (*autoscalingv1.Scale, error) {
	fm, err := For(res, "scale")
	if err != nil {
		return nil, err
	}
	scale = scale.DeepCopy()       // a retry records again on the Scale it was given
	scale.TypeMeta = live.TypeMeta // the field manager knows the type by it
	updated := fm.UpdateNoErrors(live, scale, manager)
	recorded, ok := updated.(*autoscalingv1.Scale)
	if !ok {
		return nil, fmt.Errorf("the scale field manager returned a %T", updated)
	}
	return recorded, nil
}
