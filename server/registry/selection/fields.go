package selection

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/sqlkube/sqlkube/server/resource"
)

// selectableFields are the field selector labels a built-in type supports beyond metadata.name
// and metadata.namespace, each with the path of the field it reads: its strategy says them. A
// resource without a strategy (a test's) has none.
func selectableFields(res *resource.Resource) map[string][]string {
	if typed := res.Typed(); typed != nil {
		return typed.SelectableFields()
	}
	return nil
}

// fieldValues reads the selected non-metadata fields of an object of goType (nil for a type
// without a Go type); a missing field is its zero value (see zeroString). Only the objects
// along each field's path are decoded, not the whole object.
func fieldValues(value []byte, paths map[string][]string, goType reflect.Type) (fields.Set, error) {
	obj := &rawObject{}
	if err := json.Unmarshal(value, &obj.members); err != nil {
		return nil, err
	}
	set := fields.Set{}
	for label, path := range paths {
		v, found := fieldString(obj, path)
		if !found {
			v = zeroString(goType, path)
		}
		set[label] = v
	}
	return set, nil
}

// zeroString is the value kube's GetAttrs gives a field its object omits: the zero value of the
// Go type's field at path, printed (fmt.Sprint: a node's spec.unschedulable is "false"); "" for
// a string, a pointer or a path the type does not have.
func zeroString(goType reflect.Type, path []string) string {
	key := zeroKey{goType, strings.Join(path, ".")}
	if v, ok := zeroStrings.Load(key); ok {
		return v.(string)
	}
	if len(path) == 0 {
		return "" // a label the type accepts but never sets
	}
	t := goType
	for _, name := range path {
		field, ok := jsonField(t, name)
		if !ok {
			t = nil
			break
		}
		t = field.Type
	}
	v := ""
	if t != nil && t.Kind() != reflect.Pointer && t.Kind() != reflect.String {
		v = fmt.Sprint(reflect.Zero(t).Interface())
	}
	zeroStrings.Store(key, v)
	return v
}

type zeroKey struct {
	goType reflect.Type
	path   string
}

// zeroStrings caches zeroString by type and path.
var zeroStrings sync.Map

// jsonField is the field of struct type t that encodes as name in JSON.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	if t == nil || t.Kind() != reflect.Struct {
		return reflect.StructField{}, false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if tagName, _, _ := strings.Cut(f.Tag.Get("json"), ","); tagName == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// fieldString is the value at path as a string, and whether it is set: not where the path is
// empty (a label the type accepts but never sets), missing, null or runs through a value that
// is not an object.
func fieldString(obj *rawObject, path []string) (string, bool) {
	if len(path) == 0 {
		return "", false
	}
	for _, p := range path[:len(path)-1] {
		if obj = obj.object(p); obj == nil {
			return "", false
		}
	}
	var v interface{}
	if json.Unmarshal(obj.members[path[len(path)-1]], &v) != nil {
		return "", false
	}
	return leafString(v)
}

// rawObject is a JSON object whose members are decoded when first read, each once: an object's
// selectable fields lie in a few of its members (five of a pod's in its spec, four in status).
type rawObject struct {
	members map[string]json.RawMessage
	objects map[string]*rawObject // the members decoded so far; nil for one that is no object
}

// object is the member name decoded as an object, nil if it is not one.
func (o *rawObject) object(name string) *rawObject {
	if member, done := o.objects[name]; done {
		return member
	}
	member := &rawObject{}
	if json.Unmarshal(o.members[name], &member.members) != nil || member.members == nil {
		member = nil
	}
	if o.objects == nil {
		o.objects = map[string]*rawObject{}
	}
	o.objects[name] = member
	return member
}

// objectFieldValues is fieldValues of an object already decoded (the object a write stores):
// the same values, read from its maps.
func objectFieldValues(obj map[string]any, paths map[string][]string, goType reflect.Type) fields.Set {
	set := fields.Set{}
	for label, path := range paths {
		v, found := "", false
		if len(path) > 0 {
			if leaf, ok, _ := unstructured.NestedFieldNoCopy(obj, path...); ok {
				v, found = leafString(leaf)
			}
		}
		if !found {
			v = zeroString(goType, path)
		}
		set[label] = v
	}
	return set
}

// leafString is a field's value as a field selector compares it, and whether it is set (not
// null). A whole number is printed as an integer, whether decoded from JSON (a float64) or kept
// as an int64 in an object, as kube prints its integer fields.
func leafString(v any) (string, bool) {
	switch v := v.(type) {
	case nil:
		return "", false
	case string:
		return v, true
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return strconv.FormatInt(int64(v), 10), true
		}
	}
	return fmt.Sprint(v), true
}
