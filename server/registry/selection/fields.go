package selection

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/fields"
)

// selectableFields are the field selector labels each built-in type supports beyond
// metadata.name and metadata.namespace, keyed by storage name, each with the path of the field
// it reads. Custom resources' selectableFields come from their schema instead.
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
