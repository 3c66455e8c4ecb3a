package selection

import (
	"encoding/json"
	"fmt"

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

// unsetFieldValuer is implemented by the strategies of types with a field selector label whose
// field reads as something other than "" when it is not set: kube formats a Pod's
// spec.hostNetwork as a bool ("false"), a ReplicationController's status.replicas as a number
// ("0").
type unsetFieldValuer interface {
	UnsetFieldValues() map[string]string
}

// unsetFieldValues are the values of res's selectable fields that are not set, by label; a
// label not there reads as "".
func unsetFieldValues(res *resource.Resource) map[string]string {
	if valuer, ok := res.Strategy.(unsetFieldValuer); ok {
		return valuer.UnsetFieldValues()
	}
	return nil
}

// fieldValues reads the selected non-metadata fields; a missing field has its value in unset,
// else "". Only the objects along each field's path are decoded, not the whole object.
func fieldValues(value []byte, paths map[string][]string, unset map[string]string) (fields.Set, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(value, &obj); err != nil {
		return nil, err
	}
	set := fields.Set{}
	for label, path := range paths {
		v, found := fieldString(obj, path)
		if !found {
			v = unset[label]
		}
		set[label] = v
	}
	return set, nil
}

// fieldString is the value at path as a string, and whether it is set: not where the path is
// empty (a label the type accepts but never sets), missing, null or runs through a value that
// is not an object.
func fieldString(obj map[string]json.RawMessage, path []string) (string, bool) {
	if len(path) == 0 {
		return "", false
	}
	raw := obj[path[0]]
	for _, p := range path[1:] {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return "", false
		}
		raw = m[p]
	}
	var v interface{}
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	switch v := v.(type) {
	case nil:
		return "", false
	case string:
		return v, true
	default:
		return fmt.Sprint(v), true
	}
}
