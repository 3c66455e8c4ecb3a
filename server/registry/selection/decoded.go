package selection

import (
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/fields"

	"github.com/sqlkube/sqlkube/server/resource"
)

// Decoded is a stored object as selections read it, decoded once for every selection that
// matches it: a watch decodes each event's object (and the state it replaced) once for all its
// watchers. Its metadata is decoded at once; a built-in type's selectable fields on first use,
// since most watches select none. A Decoded may be matched from several goroutines.
type Decoded struct {
	value []byte
	// meta is nil when value does not decode: such an object is never selected.
	meta *objectMeta
	// tableFields reads every selectable field its type's strategy lists, once.
	tableFields func() (fields.Set, error)
}

// Decode reads value, a stored object of res, for matching by any selection of the type stored
// as res is (one built-in resource per storage name).
func Decode(res *resource.Resource, value []byte) *Decoded {
	paths, unset := selectableFields(res), unsetFieldValues(res)
	d := &Decoded{value: value, tableFields: sync.OnceValues(func() (fields.Set, error) { return fieldValues(value, paths, unset) })}
	var meta objectMeta
	if json.Unmarshal(value, &meta) == nil {
		d.meta = &meta
	}
	return d
}

// Matches reports whether the selection selects d, which must be an object of the selection's
// type. An object that does not decode is not selected.
func (sel *Selection) Matches(d *Decoded) bool {
	if d.meta == nil {
		return false
	}
	if sel.tableFields {
		return sel.matchesMeta(d.meta, d.tableFields)
	}
	return sel.matchesMeta(d.meta, func() (fields.Set, error) { return sel.typeFields(d.value) })
}
