package registry

import (
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// selectableFields are the field selector labels each type supports beyond metadata.name and
// metadata.namespace, keyed by storage name, each with the path of the field it reads. Custom
// resources' selectableFields plug in here.
var selectableFields = map[string]map[string][]string{
	"secrets":    {"type": {"type"}},
	"namespaces": {"status.phase": {"status", "phase"}},
	"events": {
		"involvedObject.kind":            {"involvedObject", "kind"},
		"involvedObject.namespace":       {"involvedObject", "namespace"},
		"involvedObject.name":            {"involvedObject", "name"},
		"involvedObject.uid":             {"involvedObject", "uid"},
		"involvedObject.apiVersion":      {"involvedObject", "apiVersion"},
		"involvedObject.resourceVersion": {"involvedObject", "resourceVersion"},
		"involvedObject.fieldPath":       {"involvedObject", "fieldPath"},
		"reason":                         {"reason"},
		"reportingComponent":             {"reportingComponent"},
		"source":                         {"source", "component"},
		"type":                           {"type"},
	},
}

// selection is a list's or watch's label and field selector, ready to match stored objects.
type selection struct {
	labels labels.Selector
	fields fields.Selector
	// typeFields reads the fields beyond metadata the field selector uses; nil when it uses none.
	typeFields func(value []byte) (fields.Set, error)
	// tableFields: typeFields reads fields of the selectableFields table, the same for every
	// watch of the type, so that a watch event can read them once for all its watchers.
	tableFields bool
}

// newSelection checks the selectors of opts against what res supports: an unknown field label
// is 400, worded as kube-apiserver words it for the type.
func newSelection(res *resource.Resource, opts *internalversion.ListOptions) (*selection, error) {
	sel := &selection{labels: opts.LabelSelector, fields: opts.FieldSelector}
	if sel.labels == nil {
		sel.labels = labels.Everything()
	}
	if sel.fields == nil {
		sel.fields = fields.Everything()
	}
	var err error
	if res.Schema != nil {
		sel.typeFields, err = schemaFields(res, sel.fields)
	} else {
		sel.typeFields, err = builtinFields(res, sel.fields)
		sel.tableFields = true
	}
	if err != nil {
		return nil, err
	}
	return sel, nil
}

func isMetadataField(label string) bool {
	return label == "metadata.name" || label == "metadata.namespace"
}

// builtinFields checks a field selector against the selectableFields table.
func builtinFields(res *resource.Resource, selector fields.Selector) (func([]byte) (fields.Set, error), error) {
	typeFields, hasTypeFields := selectableFields[res.StorageName]
	paths := map[string][]string{}
	for _, req := range selector.Requirements() {
		// Types with field labels of their own list metadata.namespace only when namespaced.
		if req.Field == "metadata.name" || (req.Field == "metadata.namespace" && (res.Namespaced || !hasTypeFields)) {
			continue
		}
		path, ok := typeFields[req.Field]
		if !ok {
			return nil, apierrors.NewBadRequest(unsupportedFieldMessage(req.Field, hasTypeFields))
		}
		paths[req.Field] = path
	}
	if len(paths) == 0 {
		return nil, nil
	}
	return func(value []byte) (fields.Set, error) { return fieldValues(value, paths) }, nil
}

// schemaFields checks a field selector against a custom resource's selectableFields.
func schemaFields(res *resource.Resource, selector fields.Selector) (func([]byte) (fields.Set, error), error) {
	needed := false
	for _, req := range selector.Requirements() {
		if err := res.Schema.CheckFieldLabel(req.Field); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		needed = needed || !isMetadataField(req.Field)
	}
	if !needed {
		return nil, nil
	}
	return func(value []byte) (fields.Set, error) {
		obj, err := DecodeServed(res, value) // with the defaults a selectable field may have
		if err != nil {
			return nil, err
		}
		return res.Schema.FieldSet(obj)
	}, nil
}

// unsupportedFieldMessage words an unknown field label as kube-apiserver does: types with their
// own field labels reject it one way, the others list the two every type has.
func unsupportedFieldMessage(label string, typeHasFields bool) string {
	if typeHasFields {
		return fmt.Sprintf("field label not supported: %s", label)
	}
	return fmt.Sprintf("%q is not a known field selector: only %q, %q", label, "metadata.name", "metadata.namespace")
}

func (sel *selection) empty() bool { return sel.labels.Empty() && sel.fields.Empty() }

// namespace is the namespace the field selector pins (metadata.namespace=X), or "".
func (sel *selection) namespace() string {
	ns, _ := sel.fields.RequiresExactMatch("metadata.namespace")
	return ns
}

// pinsName tells whether the field selector pins one name (metadata.name=X).
func (sel *selection) pinsName() bool {
	_, ok := sel.fields.RequiresExactMatch("metadata.name")
	return ok
}

// selectedMeta is what matching by labels and metadata fields needs from a stored object.
type selectedMeta struct {
	Metadata struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
}

// decode reads value's metadata into m, reusing m's labels map: a list decodes every object it
// reads into one selectedMeta, so that the map is not allocated again for each.
func (m *selectedMeta) decode(value []byte) error {
	labels := m.Metadata.Labels
	clear(labels)
	*m = selectedMeta{} // the fields value lacks must not keep the previous object's values
	m.Metadata.Labels = labels
	return json.Unmarshal(value, m)
}

// filter is storage's list filter for the selection: it reports whether a stored object is
// selected, decoding only the fields the selectors read. Storage calls it from one goroutine, so
// that one selectedMeta serves every object.
func (sel *selection) filter() func(sqlstore.Object) bool {
	var meta selectedMeta
	return func(o sqlstore.Object) bool { return sel.matchesInto(&meta, o.Value) }
}

func (sel *selection) matchesInto(meta *selectedMeta, value []byte) bool {
	if meta.decode(value) != nil {
		return false
	}
	return sel.matchesMeta(meta, func() (fields.Set, error) { return sel.typeFields(value) })
}

// matchesMeta is matches for an object whose metadata is already decoded: a watch decodes each
// event's metadata once for all its watchers. typeFields gives the fields beyond metadata the
// field selector reads; it is called only when the selector reads some.
func (sel *selection) matchesMeta(meta *selectedMeta, typeFields func() (fields.Set, error)) bool {
	if !sel.labels.Matches(labels.Set(meta.Metadata.Labels)) {
		return false
	}
	if sel.fields.Empty() {
		return true
	}
	var set fields.Set
	if sel.typeFields != nil {
		var err error
		if set, err = typeFields(); err != nil {
			return false
		}
	}
	return sel.fields.Matches(objectFields{meta: meta, typeFields: set})
}

// objectFields are the field labels of an object: metadata.name and metadata.namespace from its
// metadata, the others from its type's fields. Reading them in place, rather than adding name
// and namespace to the set, leaves a set shared by a watch's watchers untouched.
type objectFields struct {
	meta       *selectedMeta
	typeFields fields.Set
}

func (f objectFields) Has(label string) bool {
	return isMetadataField(label) || f.typeFields.Has(label)
}

func (f objectFields) Get(label string) string {
	switch label {
	case "metadata.name":
		return f.meta.Metadata.Name
	case "metadata.namespace":
		return f.meta.Metadata.Namespace
	}
	return f.typeFields.Get(label)
}

// fieldValues reads the selected non-metadata fields; a missing field is "". Only the objects
// along each field's path are decoded, not the whole object.
func fieldValues(value []byte, paths map[string][]string) (fields.Set, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(value, &obj); err != nil {
		return nil, err
	}
	set := fields.Set{}
	for label, path := range paths {
		set[label] = fieldString(obj, path)
	}
	return set, nil
}

// fieldString is the value at path as a string; "" where the path is missing, null or runs
// through a value that is not an object.
func fieldString(obj map[string]json.RawMessage, path []string) string {
	raw := obj[path[0]]
	for _, p := range path[1:] {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return ""
		}
		raw = m[p]
	}
	var v interface{}
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}
