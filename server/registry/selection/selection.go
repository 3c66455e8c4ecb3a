// Package selection is a list's or watch's label and field selectors, as kube-apiserver reads
// them: checked against the field labels the listed type supports (400 for one it does not,
// worded as kube-apiserver words it), then matched against stored objects, decoding only what
// the selectors read. The registry builds one Selection per list, watch or deletecollection;
// storage takes its Filter, and a watch matches each event's Decoded object, decoded once for
// all its watchers.
package selection

import (
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	kubeselection "k8s.io/apimachinery/pkg/selection"

	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// Selection is a list's or watch's label and field selectors, checked against what the listed
// type supports, ready to match stored objects. Its methods may be called from several
// goroutines; each Filter is used by one.
type Selection struct {
	labels labels.Selector
	fields fields.Selector
	// typeFields reads the fields beyond metadata the field selector uses; nil when it uses none.
	typeFields func(value []byte) (fields.Set, error)
	// tableFields: typeFields reads fields the type's strategy lists, the same for every watch
	// of the type, so that a watch event's Decoded can read them once for all its watchers.
	tableFields bool
}

// ServedDecoder reads a stored object in the version a resource serves, with its schema's
// defaults (the registry's DecodeServed): a custom resource's selectable fields are read from it.
type ServedDecoder func(value []byte) (*unstructured.Unstructured, error)

// New checks the selectors of opts (nil ones select everything) against what res supports: a
// field label the type does not have is 400 BadRequest, worded as kube-apiserver words it for
// the type. served reads a custom resource's stored objects when its field selector reads a
// field beyond metadata; built-in types' fields are read from the stored JSON.
func New(res *resource.Resource, opts *internalversion.ListOptions, served ServedDecoder) (*Selection, error) {
	sel := &Selection{labels: opts.LabelSelector, fields: opts.FieldSelector}
	if sel.labels == nil {
		sel.labels = labels.Everything()
	}
	if sel.fields == nil {
		sel.fields = fields.Everything()
	}
	var err error
	if res.Schema != nil {
		sel.typeFields, err = schemaFields(res, sel.fields, served)
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

// builtinFields checks a field selector against the fields a built-in's strategy lists.
func builtinFields(res *resource.Resource, selector fields.Selector) (func([]byte) (fields.Set, error), error) {
	typeFields := selectableFields(res)
	hasTypeFields := len(typeFields) > 0
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
	goType := res.GoType()
	return func(value []byte) (fields.Set, error) { return fieldValues(value, paths, goType) }, nil
}

// schemaFields checks a field selector against a custom resource's selectableFields.
func schemaFields(res *resource.Resource, selector fields.Selector, served ServedDecoder) (func([]byte) (fields.Set, error), error) {
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
		obj, err := served(value) // with the defaults a selectable field may have
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

// Empty is true when the selection selects every object: a list or watch then needs no filter.
func (sel *Selection) Empty() bool { return sel.labels.Empty() && sel.fields.Empty() }

// Namespace is the namespace the field selector pins (metadata.namespace=X), or "": storage
// reads one namespace more cheaply than it filters them.
func (sel *Selection) Namespace() string {
	ns, _ := sel.fields.RequiresExactMatch("metadata.namespace")
	return ns
}

// PinsName tells whether the field selector pins one name (metadata.name=X).
func (sel *Selection) PinsName() bool {
	_, ok := sel.fields.RequiresExactMatch("metadata.name")
	return ok
}

// IndexKey is the key of a watch index (Decoded.AppendKeys) under which every object the
// selection selects is filed, and ok true, when it pins one: metadata.name, a built-in type's
// selectable field (a kubelet's spec.nodeName), or a label, in that order, the likeliest to be
// the narrowest first. A watch keyed so is offered only the events filed under its key.
func (sel *Selection) IndexKey() (key string, ok bool) {
	if name, ok := sel.fields.RequiresExactMatch("metadata.name"); ok {
		return fieldKey("metadata.name", name), true
	}
	for _, req := range sel.fields.Requirements() {
		if sel.tableFields && !isMetadataField(req.Field) && pins(req.Operator, 1) {
			return fieldKey(req.Field, req.Value), true
		}
	}
	reqs, _ := sel.labels.Requirements()
	for _, req := range reqs {
		if values := req.ValuesUnsorted(); pins(req.Operator(), len(values)) {
			return labelKey(req.Key(), values[0]), true
		}
	}
	return "", false
}

// pins reports whether a requirement with operator op and n values selects one value.
func pins(op kubeselection.Operator, n int) bool {
	return n == 1 && (op == kubeselection.Equals || op == kubeselection.DoubleEquals || op == kubeselection.In)
}

// Filter is storage's list filter for the selection (sqlstore.ListOptions.Filter): it reports
// whether a stored object is selected, decoding only the fields the selectors read. An object
// that does not decode is not selected. A Filter is used by one goroutine, as storage calls it,
// so that one decoded metadata serves every object it reads.
func (sel *Selection) Filter() func(sqlstore.Object) bool {
	var meta objectMeta
	return func(o sqlstore.Object) bool {
		if meta.decode(o.Value) != nil {
			return false
		}
		return sel.matchesMeta(&meta, func() (fields.Set, error) { return sel.typeFields(o.Value) })
	}
}

// matchesMeta is whether an object whose metadata is decoded is selected. typeFields gives the
// fields beyond metadata the field selector reads; it is called only when the selector reads some.
func (sel *Selection) matchesMeta(meta *objectMeta, typeFields func() (fields.Set, error)) bool {
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

// objectMeta is what matching by labels and metadata fields needs from a stored object.
type objectMeta struct {
	Metadata struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
}

// decode reads value's metadata into m, reusing m's labels map: a list decodes every object it
// reads into one objectMeta, so that the map is not allocated again for each.
func (m *objectMeta) decode(value []byte) error {
	labels := m.Metadata.Labels
	clear(labels)
	*m = objectMeta{} // the fields value lacks must not keep the previous object's values
	m.Metadata.Labels = labels
	return json.Unmarshal(value, m)
}

// objectFields are the field labels of an object: metadata.name and metadata.namespace from its
// metadata, the others from its type's fields. Reading them in place, rather than adding name
// and namespace to the set, leaves a set shared by a watch's watchers untouched.
type objectFields struct {
	meta       *objectMeta
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
