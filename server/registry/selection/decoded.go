package selection

import (
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// Decoded is a stored object as selections read it, decoded once for every selection that
// matches it: a watch decodes each event's object (and the state it replaced) once for all its
// watchers. Its metadata is decoded at once; a built-in type's selectable fields on first use,
// since most watches select none. A Decoded may be matched from several goroutines.
type Decoded struct {
	// res is the resource it was read for: it serves the selections of the resources that read
	// the same fields (ReadFor).
	res   *resource.Resource
	value []byte
	// meta is nil when value does not decode: such an object is never selected.
	meta *objectMeta
	// tableFields reads every selectable field its type's strategy lists, once.
	tableFields func() (fields.Set, error)
}

// Decode reads value, a stored object of res, for matching by any selection of the type stored
// as res is (one built-in resource per storage name).
func Decode(res *resource.Resource, value []byte) *Decoded {
	paths := selectableFields(res)
	d := &Decoded{res: res, value: value, tableFields: sync.OnceValues(func() (fields.Set, error) { return fieldValues(value, paths, res.GoType()) })}
	var meta objectMeta
	if json.Unmarshal(value, &meta) == nil {
		d.meta = &meta
	}
	return d
}

// Of is obj, a stored object of res, as selections of res read it: from the Attributes its
// write attached (an event of a write of this process) when they were read for res, decoded
// from its value otherwise.
func Of(res *resource.Resource, obj sqlstore.Object) *Decoded {
	attrs, ok := obj.Attached.(*Attributes)
	if !ok || !sameFields(attrs.res, res) {
		return Decode(res, obj.Value)
	}
	return &Decoded{res: res, value: obj.Value, meta: &attrs.meta, tableFields: attrs.tableFields}
}

// Matches reports whether the selection selects d, which must have been read for a resource
// whose fields the selection's reads (Decoded.ReadFor). An object that does not decode is not
// selected.
func (sel *Selection) Matches(d *Decoded) bool {
	if d.meta == nil {
		return false
	}
	if sel.tableFields {
		return sel.matchesMeta(d.meta, d.tableFields)
	}
	return sel.matchesMeta(d.meta, func() (fields.Set, error) { return sel.typeFields(d.value) })
}

// ReadFor reports whether d serves the selections of res: whether it was read for a resource
// whose selectable fields are res's. Two served versions of one storage may differ (events.k8s.io
// events are core events with other field labels).
func (d *Decoded) ReadFor(res *resource.Resource) bool { return sameFields(d.res, res) }

// sameFields reports whether a and b select the same fields (FieldsKey).
func sameFields(a, b *resource.Resource) bool { return FieldsKey(a) == FieldsKey(b) }

// FieldsKey names what the selections of res read of an object: equal for two resources whose
// Decoded serve each other's selections. The resource itself for a built-in type (two served
// versions of one storage may differ: events.k8s.io events are core events with other field
// labels); one key for every resource without a built-in's selectable fields (a CRD's versions
// and generations: a custom resource's fields are read by each selection).
func FieldsKey(res *resource.Resource) any {
	if res.Typed() == nil {
		return customFields{}
	}
	return res
}

// customFields is the FieldsKey of the resources without a built-in's selectable fields.
type customFields struct{}

// Attributes are what selections read of an object, kube's GetAttrs: its name, namespace and
// labels, and a built-in type's selectable fields. A write reads them once from the object it
// stores and hands them to its watch event (sqlstore.Write.Attached), so that no watcher
// decodes what this process wrote.
type Attributes struct {
	res    *resource.Resource
	meta   objectMeta
	fields fields.Set
}

// AttributesOf reads obj, an object of res as stored, for the selections of res. obj is not
// kept.
func AttributesOf(res *resource.Resource, obj *unstructured.Unstructured) *Attributes {
	a := &Attributes{res: res}
	a.meta.Metadata.Name, a.meta.Metadata.Namespace, a.meta.Metadata.Labels = obj.GetName(), obj.GetNamespace(), obj.GetLabels()
	if paths := selectableFields(res); len(paths) > 0 {
		a.fields = objectFieldValues(obj.Object, paths, res.GoType())
	}
	return a
}

func (a *Attributes) tableFields() (fields.Set, error) { return a.fields, nil }

// AppendKeys appends the keys a watch index files d under (see Selection.IndexKey): its name,
// each of its labels and, for a built-in type, each of its selectable fields. An object that
// does not decode has none: it is never selected.
func (d *Decoded) AppendKeys(keys []string) []string {
	if d.meta == nil {
		return keys
	}
	keys = append(keys, fieldKey("metadata.name", d.meta.Metadata.Name))
	for k, v := range d.meta.Metadata.Labels {
		keys = append(keys, labelKey(k, v))
	}
	if set, err := d.tableFields(); err == nil {
		for label, v := range set {
			keys = append(keys, fieldKey(label, v))
		}
	}
	return keys
}

// A key is what a selection pins, "f:" or "l:" (field or label) followed by "label=value": a
// field label or label key holds no "=", so no two pins share a key.
func fieldKey(label, value string) string { return "f:" + label + "=" + value }

func labelKey(key, value string) string { return "l:" + key + "=" + value }
