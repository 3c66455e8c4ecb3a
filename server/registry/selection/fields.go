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
