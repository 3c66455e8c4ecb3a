package registry

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/sqlkube/sqlkube/sqlstore"
)

// Watch is one watch of a resource's objects as kube-apiserver's cacher serves it: optionally
// the objects of a snapshot first (sendInitialEvents), then every change after its starting
// revision, as its selectors see it. Make one with NewWatch, Start it, then turn each store event
// of Events into what the client gets with Next; Close it when done.
type Watch struct {
	reg *Registry
	req *request
	sel *selection
	// selectsAll is sel.empty(), asked once rather than for every event.
	selectsAll bool
	namespace  string // the namespace storage narrows the watch to
	opts       *internalversion.ListOptions
	// floor is the revision the changes sent start after: the one asked for, or the snapshot of
	// the initial events. No change at or below it is sent.
	floor   int64
	watcher *sqlstore.Watcher
}

// WatchEvent is what a watch client gets: an object event (Value is the object as stored, not
// yet converted to the version served), or a BOOKMARK at Revision.
type WatchEvent struct {
	Type     watch.EventType
	Value    []byte
	Revision int64
	// InitialEventsEnd marks the bookmark that ends the initial events of a watch list.
	InitialEventsEnd bool
}

// NewWatch checks a watch request: its selectors against what the type supports, and its
// resourceVersion. A watch of one object (ref.Name, the legacy /watch/.../NAME path) is a watch
// selecting metadata.name, as kube-apiserver does.
func (r *Registry) NewWatch(ref Ref, opts *internalversion.ListOptions) (*Watch, error) {
	if err := selectName(opts, ref.Name); err != nil {
		return nil, err
	}
	sel, err := newSelection(ref.Resource, opts)
	if err != nil {
		return nil, err
	}
	start, err := ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	w := &Watch{reg: r, req: newRequest(Ref{Resource: ref.Resource, Namespace: ref.Namespace}, nil, "", nil), sel: sel,
		selectsAll: sel.empty(), namespace: ref.Namespace, opts: opts, floor: start}
	if w.namespace == "" && ref.Resource.Namespaced {
		w.namespace = sel.namespace()
	}
	return w, nil
}

// selectName makes a watch of one object a watch selecting metadata.name; a field selector
// naming another object is 400.
func selectName(opts *internalversion.ListOptions, name string) error {
	if name == "" {
		return nil
	}
	if opts.FieldSelector == nil || opts.FieldSelector.Empty() {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", name)
		return nil
	}
	if selected, ok := opts.FieldSelector.RequiresExactMatch("metadata.name"); !ok || selected != name {
		return apierrors.NewBadRequest("fieldSelector metadata.name doesn't match requested name")
	}
	return nil
}

// Start sends the initial events to emit if asked for, then starts the store's watch where the
// changes the client gets begin. Once it returns without error, a client that has seen what
// emit was given sees every later change.
func (w *Watch) Start(ctx context.Context, emit func(WatchEvent) error) error {
	var err error
	if w.opts.SendInitialEvents != nil && *w.opts.SendInitialEvents {
		if w.floor, err = w.sendInitialEvents(ctx, w.floor, emit); err != nil {
			return err
		}
	} else if w.floor == 0 {
		// sendInitialEvents=false: start from the latest state, without it.
		if w.floor, err = w.reg.store.CurrentRevision(ctx); err != nil {
			return storageError(err, w.req.gr, "")
		}
	}
	if w.watcher, err = w.watchAfter(ctx, w.floor); err != nil {
		return storageError(err, w.req.gr, "")
	}
	return nil
}

// sendInitialEvents emits the objects of a consistent snapshot not older than minRevision as
// ADDED events, then, when the client takes bookmarks, the bookmark that marks their end. It
// returns the snapshot's revision, which the changes follow.
func (w *Watch) sendInitialEvents(ctx context.Context, minRevision int64, emit func(WatchEvent) error) (int64, error) {
	if minRevision > 0 {
		if err := w.reg.WaitForRevision(ctx, minRevision); err != nil {
			return 0, err
		}
	}
	opts := sqlstore.ListOptions{Resource: w.req.res.StorageName, Namespace: w.namespace}
	if !w.selectsAll {
		opts.Filter = w.sel.filter()
	}
	result, err := w.reg.store.List(ctx, opts, func(o sqlstore.Object) error {
		return emit(WatchEvent{Type: watch.Added, Value: o.Value, Revision: o.Revision})
	})
	if err != nil {
		return 0, storageError(err, w.req.gr, "")
	}
	if w.opts.AllowWatchBookmarks {
		if err := emit(WatchEvent{Type: watch.Bookmark, Revision: result.Revision, InitialEventsEnd: true}); err != nil {
			return 0, err
		}
	}
	return result.Revision, nil
}

// watchAfter starts the store's watch after revision. A revision the store has not reached yet
// is not an error, as in kube-apiserver's watch cache: the watch starts at the current revision
// and skips the changes up to the requested one.
func (w *Watch) watchAfter(ctx context.Context, revision int64) (*sqlstore.Watcher, error) {
	opts := sqlstore.WatchOptions{Resource: w.req.res.StorageName, Namespace: w.namespace, After: revision}
	watcher, err := w.reg.store.Watch(ctx, opts)
	var future *sqlstore.FutureRevisionError
	if errors.As(err, &future) {
		opts.After = future.Current
		return w.reg.store.Watch(ctx, opts)
	}
	return watcher, err
}

// Events are the store's events after the start; Next says what each one is to the client. The
// channel closes when the store ends the watch (see Err).
func (w *Watch) Events() <-chan *sqlstore.Event { return w.watcher.Events() }

// RequestProgress asks for a progress event: Next turns it into a bookmark.
func (w *Watch) RequestProgress() { w.watcher.RequestProgress() }

// Close stops the watch.
func (w *Watch) Close() {
	if w.watcher != nil {
		w.watcher.Close()
	}
}

// Err is why the store ended the watch, as the client is told it: nil for a watcher that fell
// behind, which kube-apiserver closes without an error (the client watches again from the last
// revision it received).
func (w *Watch) Err() error {
	err := w.watcher.Err()
	if err == nil || errors.Is(err, sqlstore.ErrWatcherTooSlow) || errors.Is(err, sqlstore.ErrClosed) {
		return nil
	}
	return storageError(err, schema.GroupResource{}, "")
}

// Next is the event the client gets for a store event; ok is false when it gets none (a change
// at or below the start, or one outside the selection).
func (w *Watch) Next(ev *sqlstore.Event) (out WatchEvent, ok bool, err error) {
	if ev.Progress {
		return WatchEvent{Type: watch.Bookmark, Revision: max(ev.Revision, w.floor)}, true, nil
	}
	if ev.Revision <= w.floor {
		return WatchEvent{}, false, nil
	}
	if ev.Err != nil { // as kube-apiserver's storage ends a watch at an event it cannot read
		return WatchEvent{}, false, storageError(ev.Err, w.req.gr, "")
	}
	eventType, value, err := w.change(ev)
	if err != nil || eventType == "" {
		return WatchEvent{}, false, err
	}
	return WatchEvent{Type: eventType, Value: value, Revision: ev.Revision}, true, nil
}

// change is how a write looks through the selection, as kube-apiserver's cacher decides it: an
// object that enters the selection is ADDED, one that stays MODIFIED, and one that leaves (or is
// deleted) DELETED, carrying its last selected state at the event's revision. eventType is empty
// when the write is not visible to this watch.
func (w *Watch) change(ev *sqlstore.Event) (eventType watch.EventType, value []byte, err error) {
	nowSelected, wasSelected := w.selected(ev)
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
func (w *Watch) selected(ev *sqlstore.Event) (now, before bool) {
	hasBefore := ev.Prev != nil || ev.Op == sqlstore.OpDelete
	if w.selectsAll {
		return ev.Op != sqlstore.OpDelete, hasBefore
	}
	m := ev.Memo(func() any { return decodeEventMeta(ev) }).(*eventMeta)
	now = ev.Op != sqlstore.OpDelete && m.object != nil && w.sel.matchesMeta(m.object, w.typeFields(m.objectFields, ev.Object.Value))
	if ev.Prev != nil {
		before = m.prev != nil && w.sel.matchesMeta(m.prev, w.typeFields(m.prevFields, ev.Prev.Value))
	} else if ev.Op == sqlstore.OpDelete {
		before = m.object != nil && w.sel.matchesMeta(m.object, w.typeFields(m.objectFields, ev.Object.Value))
	}
	return now, before
}

// typeFields gives the fields beyond metadata the watch's field selector reads from value: the
// event's shared reading of a built-in type's fields, or the selection's own.
func (w *Watch) typeFields(shared func() (fields.Set, error), value []byte) func() (fields.Set, error) {
	if w.sel.tableFields {
		return shared
	}
	return func() (fields.Set, error) { return w.sel.typeFields(value) }
}

// eventMeta is what selectors read from an event's object and previous state, decoded once per
// event for every watcher (Event.Memo): the metadata (nil where it does not decode), and a
// built-in type's selectable fields, read on first use since most watches select none.
type eventMeta struct {
	object, prev             *selectedMeta
	objectFields, prevFields func() (fields.Set, error)
}

func decodeEventMeta(ev *sqlstore.Event) any {
	paths := selectableFields[ev.Object.Key.Resource]
	m := &eventMeta{object: decodeSelectedMeta(ev.Object.Value), objectFields: sharedFieldValues(ev.Object.Value, paths)}
	if ev.Prev != nil {
		m.prev = decodeSelectedMeta(ev.Prev.Value)
		m.prevFields = sharedFieldValues(ev.Prev.Value, paths)
	}
	return m
}

// sharedFieldValues reads all the fields of paths from value once, for every watcher that asks.
func sharedFieldValues(value []byte, paths map[string][]string) func() (fields.Set, error) {
	return sync.OnceValues(func() (fields.Set, error) { return fieldValues(value, paths) })
}

func decodeSelectedMeta(value []byte) *selectedMeta {
	var m selectedMeta
	if json.Unmarshal(value, &m) != nil {
		return nil
	}
	return &m
}

// withResourceVersion is a stored object with its resourceVersion replaced: the state an object
// had before it left a watch's selection, sent at the revision it left.
func withResourceVersion(value []byte, revision int64) ([]byte, error) {
	obj, err := DecodeStored(value)
	if err != nil {
		return nil, err
	}
	obj.SetResourceVersion(revisionString(revision))
	return json.Marshal(obj.Object)
}
