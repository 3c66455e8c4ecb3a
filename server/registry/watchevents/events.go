// Package watchevents is the part of a watch's event pipeline that reads no storage, as
// kube-apiserver's cacher serves a watch: which event a store's change is through the watch's
// selection (Converter), the object a client gets in the served version, the bookmark objects,
// and when bookmarks are due (Schedule). The registry's Watch feeds it the store's events.
package watchevents

import (
	"encoding/json"
	"errors"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/sqlkube/sqlkube/server/registry/selection"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// Event is one event a watch client gets, ready to encode.
type Event struct {
	// Type is ADDED, MODIFIED, DELETED, BOOKMARK, or ERROR, which is a watch's last event.
	Type watch.EventType
	// Object is the event's object as JSON. For ADDED, MODIFIED and DELETED it is the object in
	// the version the watched resource serves; for BOOKMARK, kube-apiserver's bookmark object
	// (see bookmarkObject); nil for ERROR.
	Object []byte
	// Stored is the object as stored: Object itself unless the resource converts it (a Table
	// prints a built-in's row from it); a BOOKMARK's is its Object.
	Stored []byte
	// Err is why an ERROR event ended the watch: a Status error, as the client is told it.
	Err error
	// shared is the store event whose object this event carries as written (nil for a
	// BOOKMARK, an ERROR, an object's state before it left the selection, an initial event):
	// what is derived from the event is computed on it once for every watch (Memo).
	shared *sqlstore.Event
}

// Memo returns what compute derives from this event for key, computing it once for every watch
// that receives the same store event and asks with an equal key (a comparable value naming
// all compute depends on: the version served, the encoding, the event's type), so that a write
// is converted and encoded once however many watch it. Events of a watch's own compute it each
// time.
func (e Event) Memo(key any, compute func() any) any {
	if e.shared == nil {
		return compute()
	}
	return e.shared.MemoKeyed(key, compute)
}

// Error is the ERROR event that ends a watch for err.
func Error(err error) Event { return Event{Type: watch.Error, Err: err} }

// Converter turns the store's events into the events of one watch of res through sel.
type Converter struct {
	res *resource.Resource
	sel *selection.Selection
	// selectsAll is sel.Empty(), asked once rather than for every event.
	selectsAll bool
}

func NewConverter(res *resource.Resource, sel *selection.Selection) *Converter {
	return &Converter{res: res, sel: sel, selectsAll: sel.Empty()}
}

// Filter is the store's filter for the selection's objects; nil when it selects all.
func (c *Converter) Filter() func(sqlstore.Object) bool {
	if c.selectsAll {
		return nil
	}
	return c.sel.Filter()
}

// Change is the event the client gets for a store event; ok is false when it gets none (a
// change at or below floor, the revision the watch's changes start after, or one outside the
// selection).
func (c *Converter) Change(ev *sqlstore.Event, floor int64) (out Event, ok bool) {
	if ev.Progress {
		out, err := c.Bookmark(max(ev.Revision, floor), false)
		if err != nil {
			return Error(err), true
		}
		return out, true
	}
	if ev.Revision <= floor {
		return Event{}, false
	}
	if ev.Err != nil { // as kube-apiserver's storage ends a watch at an event it cannot read
		return Error(storedobj.StorageError(ev.Err, c.res.GroupResource(), "")), true
	}
	eventType, stored, err := c.selectedChange(ev)
	if err != nil {
		return Error(err), true
	}
	if eventType == "" {
		return Event{}, false
	}
	out = Event{Type: eventType, Stored: stored}
	if sameBytes(stored, ev.Object.Value) {
		out.shared = ev
	}
	served := out.Memo(servedKey{c.res}, func() any {
		value, err := c.Served(stored)
		return servedValue{value, err}
	}).(servedValue)
	if served.err != nil {
		return Error(served.err), true
	}
	out.Object = served.value
	return out, true
}

// servedKey memoizes an event's object in the version res serves.
type servedKey struct{ res *resource.Resource }

type servedValue struct {
	value []byte
	err   error
}

// sameBytes reports whether a and b are the same bytes in memory, not merely equal ones.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Served is a stored object in the version the watch serves. An object that cannot be
// converted is a 500, as kube-apiserver's storage answers an event it cannot decode.
func (c *Converter) Served(value []byte) ([]byte, error) {
	served, err := storedobj.ServedJSON(c.res, value)
	if errors.As(err, new(*storedobj.NotDecodableError)) {
		return nil, apierrors.NewInternalError(err)
	}
	return served, err
}

// Bookmark is a BOOKMARK at revision; the one that ends a watch list's initial events carries
// the k8s.io/initial-events-end annotation.
func (c *Converter) Bookmark(revision int64, initialEventsEnd bool) (Event, error) {
	object, err := bookmarkObject(c.res, revision, initialEventsEnd)
	return Event{Type: watch.Bookmark, Object: object, Stored: object}, err
}

// bookmarkObject is the object of a BOOKMARK event as kube-apiserver encodes it: an empty object
// of the type, with only kind, apiVersion and metadata.resourceVersion (and the initial-events-end
// annotation). Built-in types are encoded from their Go type, so that their fields without
// omitempty appear as they do there; custom resources are bare unstructured objects.
func bookmarkObject(res *resource.Resource, revision int64, initialEventsEnd bool) ([]byte, error) {
	gvk := schema.GroupVersionKind{Group: res.Group, Version: res.Version, Kind: res.Kind}
	obj, err := clientgoscheme.Scheme.New(gvk)
	if err != nil || res.Schema != nil {
		obj = &unstructured.Unstructured{Object: map[string]any{}}
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	accessor.SetResourceVersion(strconv.FormatInt(revision, 10))
	if initialEventsEnd {
		accessor.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return json.Marshal(u.Object) // what kube-apiserver's unstructured encoder writes
	}
	return json.Marshal(obj)
}

// selectedChange is how a write looks through the selection, as kube-apiserver's cacher decides
// it: an object that enters the selection is ADDED, one that stays MODIFIED, and one that leaves
// (or is deleted) DELETED, carrying its last selected state at the event's revision. eventType
// is empty when the write is not visible to this watch.
func (c *Converter) selectedChange(ev *sqlstore.Event) (eventType watch.EventType, value []byte, err error) {
	nowSelected, wasSelected := c.selected(ev)
	switch {
	case nowSelected && wasSelected:
		return watch.Modified, ev.Object.Value, nil
	case nowSelected:
		return watch.Added, ev.Object.Value, nil
	case !wasSelected:
		return "", nil, nil
	case ev.Op == sqlstore.OpDelete:
		return watch.Deleted, ev.Object.Value, nil // stored as deleted, at the delete's revision
	}
	value, err = withResourceVersion(ev.Prev.Value, ev.Revision)
	return watch.Deleted, value, err
}

// selected reports whether the event's new state and the state it replaced are in the selection.
// A deleted object has no new state.
func (c *Converter) selected(ev *sqlstore.Event) (now, before bool) {
	hasBefore := ev.Prev != nil || ev.Op == sqlstore.OpDelete
	if c.selectsAll {
		return ev.Op != sqlstore.OpDelete, hasBefore
	}
	m := metaFor(c.res, ev)
	now = ev.Op != sqlstore.OpDelete && c.sel.Matches(m.object)
	if ev.Prev != nil {
		before = c.sel.Matches(m.prev)
	} else if ev.Op == sqlstore.OpDelete {
		before = c.sel.Matches(m.object)
	}
	return now, before
}

// eventMeta is what selectors read from an event's object and previous state, read once per
// event for every watcher of resources that read the same fields (Event.MemoKeyed): from what
// the write attached when this process wrote it, decoded otherwise.
type eventMeta struct {
	object, prev *selection.Decoded
}

// metaKey memoizes an event's eventMeta for the resources whose selections read fields.
type metaKey struct{ fields any }

// metaFor is the event's eventMeta for the selections of res.
func metaFor(res *resource.Resource, ev *sqlstore.Event) *eventMeta {
	return ev.MemoKeyed(metaKey{selection.FieldsKey(res)}, func() any { return readEventMeta(res, ev) }).(*eventMeta)
}

func readEventMeta(res *resource.Resource, ev *sqlstore.Event) *eventMeta {
	m := &eventMeta{object: selection.Of(res, ev.Object)}
	if ev.Prev != nil {
		m.prev = selection.Of(res, *ev.Prev)
	}
	return m
}

// NewIndex is the watch index of res's events (sqlstore.Index): each is filed under the keys
// (Decoded.AppendKeys) of its object and of the state it replaced, for the watches whose
// selection pins a key (selection.Selection.IndexKey). Watches share one per resource.
func NewIndex(res *resource.Resource) *sqlstore.Index {
	return sqlstore.NewIndex(func(ev *sqlstore.Event) []string {
		m := metaFor(res, ev)
		keys := m.object.AppendKeys(nil)
		if m.prev != nil {
			keys = m.prev.AppendKeys(keys)
		}
		return keys
	})
}

// withResourceVersion is a stored object with its resourceVersion replaced: the state an object
// had before it left a watch's selection, sent at the revision it left.
func withResourceVersion(value []byte, revision int64) ([]byte, error) {
	obj, err := storedobj.DecodeStored(value)
	if err != nil {
		return nil, err
	}
	obj.SetResourceVersion(strconv.FormatInt(revision, 10))
	return json.Marshal(obj.Object)
}
