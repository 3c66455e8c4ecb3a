package registry

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/sqlkube/sqlkube/server/registry/selection"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

const (
	// defaultBookmarkInterval is how often kube-apiserver's cacher sends a watch a bookmark.
	defaultBookmarkInterval = time.Minute
	// bookmarkBeforeTimeout: the cacher also sends one this long before a watch's deadline, so
	// that the client resumes from a recent revision.
	bookmarkBeforeTimeout = 2 * time.Second
)

// WatchEvent is one event a watch client gets, ready to encode.
type WatchEvent struct {
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
}

// Watch is one watch of a resource's objects as kube-apiserver's cacher serves it: optionally
// the objects of a snapshot first (sendInitialEvents, ended by a bookmark when the client takes
// bookmarks), then every change after its starting revision as its selectors see it, with
// bookmarks every bookmark interval and shortly before ctx's deadline. Its events come out of
// Next filtered, converted to the served version and in order; errors once it has started are
// an ERROR event, as kube-apiserver sends them. Make one with Registry.Watch and Stop it when
// done. A Watch is used by one goroutine.
type Watch struct {
	reg  *Registry
	ctx  context.Context
	req  *request
	sel  *selection.Selection
	opts *internalversion.ListOptions
	// selectsAll is sel.Empty(), asked once rather than for every event.
	selectsAll bool
	namespace  string // the namespace storage narrows the watch to
	// floor is the revision the changes sent start after: the one asked for, or the snapshot of
	// the initial events. No change at or below it is sent.
	floor int64
	// initial pulls the events of the start (the initial events), nil once they are all out.
	initial     func() (WatchEvent, bool)
	stopInitial func()
	// watcher is the store's watch of the changes, nil until the start is done.
	watcher   *sqlstore.Watcher
	bookmarks *bookmarkSchedule
	// returned is true when Next returned events since it last returned none.
	returned bool
	done     bool
}

// Watch checks a watch request: its selectors against what the type supports, and its
// resourceVersion. A watch of one object (ref.Name, the legacy /watch/.../NAME path) is a watch
// selecting metadata.name, as kube-apiserver does. The watch runs until ctx ends or Stop; its
// bookmarks come every Options.WatchBookmarkInterval and shortly before ctx's deadline when
// opts.AllowWatchBookmarks. Errors returned here are the request's (the client gets them as
// the answer's Status); later ones are events.
func (r *Registry) Watch(ctx context.Context, ref Ref, opts *internalversion.ListOptions) (*Watch, error) {
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
	w := &Watch{reg: r, ctx: ctx, req: newRequest(Ref{Resource: ref.Resource, Namespace: ref.Namespace}, nil, "", nil), sel: sel,
		selectsAll: sel.Empty(), namespace: ref.Namespace, opts: opts, floor: start}
	if w.namespace == "" && ref.Resource.Namespaced {
		w.namespace = sel.Namespace()
	}
	w.initial, w.stopInitial = iter.Pull(w.startEvents)
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

// Next returns the client's next event (ok true). It returns none (ok false) when the caller
// should send what it wrote before the watch waits: once when the watch has its starting point
// (after the initial events, if any; Started is then true: a client that has what was returned
// sees every later change), and whenever no further event is ready after it returned some. It
// also returns none when wake fires (the caller's own timer), when ctx ends, and once the watch
// has ended (Done). The first call starts the watch, and with sendInitialEvents returns the
// initial events before waiting for anything.
func (w *Watch) Next(wake <-chan time.Time) (ev WatchEvent, ok bool) {
	switch {
	case w.done:
		return WatchEvent{}, false
	case w.initial != nil:
		return w.nextInitial()
	}
	return w.nextChange(wake)
}

// Started reports whether the watch has its starting point: the store's watch of the changes.
func (w *Watch) Started() bool { return w.watcher != nil }

// Done reports whether the watch has ended: its ERROR event was returned, the store ended it
// without an error (as kube-apiserver's cacher ends a watcher that fell behind: the client
// watches again from the last revision it received), or ctx ended.
func (w *Watch) Done() bool { return w.done || w.ctx.Err() != nil }

// Stop ends the watch and releases what it holds.
func (w *Watch) Stop() {
	w.done = true
	if w.stopInitial != nil {
		w.stopInitial()
	}
	if w.watcher != nil {
		w.watcher.Close()
	}
	if w.bookmarks != nil {
		w.bookmarks.stop()
	}
}

// nextInitial returns the start's next event; once the start is done, none, so that the caller
// sends them all before the watch waits.
func (w *Watch) nextInitial() (WatchEvent, bool) {
	if ev, ok := w.initial(); ok {
		w.done = ev.Type == watch.Error
		return ev, true
	}
	w.stopInitial()
	w.initial, w.stopInitial = nil, nil
	w.bookmarks = newBookmarkSchedule(w.ctx, w.opts.AllowWatchBookmarks, w.reg.bookmarkInterval())
	return WatchEvent{}, false
}

func (r *Registry) bookmarkInterval() time.Duration {
	if r.opts.WatchBookmarkInterval > 0 {
		return r.opts.WatchBookmarkInterval
	}
	return defaultBookmarkInterval
}

// startEvents are the events of the watch's start, which ends with the store's watch of the
// changes: the initial events if asked for, or an ERROR event if the start failed.
func (w *Watch) startEvents(yield func(WatchEvent) bool) {
	if err := w.start(yield); err != nil && !errors.Is(err, errStopped) {
		yield(errorEvent(err))
	}
}

// errStopped ends the initial events when the caller stops taking them.
var errStopped = errors.New("watch stopped")

// start sends the initial events to yield if asked for, then starts the store's watch where
// the changes the client gets begin.
func (w *Watch) start(yield func(WatchEvent) bool) error {
	var err error
	if w.opts.SendInitialEvents != nil && *w.opts.SendInitialEvents {
		if w.floor, err = w.sendInitialEvents(w.floor, yield); err != nil {
			return err
		}
	} else if w.floor == 0 {
		// sendInitialEvents=false: start from the latest state, without it.
		if w.floor, err = w.reg.store.CurrentRevision(w.ctx); err != nil {
			return storedobj.StorageError(err, w.req.gr, "")
		}
	}
	if w.watcher, err = w.watchAfter(w.floor); err != nil {
		return storedobj.StorageError(err, w.req.gr, "")
	}
	return nil
}

// sendInitialEvents sends the objects of a consistent snapshot not older than minRevision as
// ADDED events, then, when the client takes bookmarks, the bookmark that marks their end. It
// returns the snapshot's revision, which the changes follow.
func (w *Watch) sendInitialEvents(minRevision int64, yield func(WatchEvent) bool) (int64, error) {
	if minRevision > 0 {
		if err := w.reg.WaitForRevision(w.ctx, minRevision); err != nil {
			return 0, err
		}
	}
	opts := sqlstore.ListOptions{Resource: w.req.res.StorageName, Namespace: w.namespace}
	if !w.selectsAll {
		opts.Filter = w.sel.Filter()
	}
	// stopped is why the initial events stopped before the list's end: an object that cannot be
	// served, or the caller's stop.
	var stopped error
	result, err := w.reg.store.List(w.ctx, opts, func(o sqlstore.Object) error {
		served, err := w.served(o.Value)
		if err != nil {
			stopped = err
		} else if !yield(WatchEvent{Type: watch.Added, Object: served, Stored: o.Value}) {
			stopped = errStopped
		}
		return stopped
	})
	if stopped != nil {
		return 0, stopped
	}
	if err != nil {
		return 0, storedobj.StorageError(err, w.req.gr, "")
	}
	if w.opts.AllowWatchBookmarks {
		if err := w.sendBookmark(result.Revision, true, yield); err != nil {
			return 0, err
		}
	}
	return result.Revision, nil
}

func (w *Watch) sendBookmark(revision int64, initialEventsEnd bool, yield func(WatchEvent) bool) error {
	ev, err := w.bookmark(revision, initialEventsEnd)
	if err != nil {
		return err
	}
	if !yield(ev) {
		return errStopped
	}
	return nil
}

// watchAfter starts the store's watch after revision. A revision the store has not reached yet
// is not an error, as in kube-apiserver's watch cache: the watch starts at the current revision
// and skips the changes up to the requested one.
func (w *Watch) watchAfter(revision int64) (*sqlstore.Watcher, error) {
	opts := sqlstore.WatchOptions{Resource: w.req.res.StorageName, Namespace: w.namespace, After: revision}
	watcher, err := w.reg.store.Watch(w.ctx, opts)
	var future *sqlstore.FutureRevisionError
	if errors.As(err, &future) {
		opts.After = future.Current
		return w.reg.store.Watch(w.ctx, opts)
	}
	return watcher, err
}

// nextChange returns the client's next event among the store's changes, asking the store for
// progress when a bookmark is due.
func (w *Watch) nextChange(wake <-chan time.Time) (WatchEvent, bool) {
	events := w.watcher.Events()
	for {
		if w.returned && len(events) == 0 {
			w.returned = false
			return WatchEvent{}, false
		}
		select {
		case <-w.ctx.Done():
			return WatchEvent{}, false
		case <-wake:
			return WatchEvent{}, false
		case <-w.bookmarks.c():
			w.watcher.RequestProgress()
			w.bookmarks.next()
		case ev, open := <-events:
			if !open {
				return w.end()
			}
			out, ok := w.change(ev)
			if ok {
				w.returned = true
				w.done = out.Type == watch.Error
				return out, true
			}
		}
	}
}

// end is the end of a watch the store ended: an ERROR event, or, for a watcher that fell
// behind, which kube-apiserver closes without an error, none.
func (w *Watch) end() (WatchEvent, bool) {
	w.done = true
	err := w.watcher.Err()
	if err == nil || errors.Is(err, sqlstore.ErrWatcherTooSlow) || errors.Is(err, sqlstore.ErrClosed) {
		return WatchEvent{}, false
	}
	return errorEvent(storedobj.StorageError(err, schema.GroupResource{}, "")), true
}

func errorEvent(err error) WatchEvent { return WatchEvent{Type: watch.Error, Err: err} }

// change is the event the client gets for a store event; ok is false when it gets none (a
// change at or below the start, or one outside the selection).
func (w *Watch) change(ev *sqlstore.Event) (out WatchEvent, ok bool) {
	if ev.Progress {
		out, err := w.bookmark(max(ev.Revision, w.floor), false)
		if err != nil {
			return errorEvent(err), true
		}
		return out, true
	}
	if ev.Revision <= w.floor {
		return WatchEvent{}, false
	}
	if ev.Err != nil { // as kube-apiserver's storage ends a watch at an event it cannot read
		return errorEvent(storedobj.StorageError(ev.Err, w.req.gr, "")), true
	}
	eventType, stored, err := w.selectedChange(ev)
	var served []byte
	if err == nil && eventType != "" {
		served, err = w.served(stored)
	}
	if err != nil {
		return errorEvent(err), true
	}
	return WatchEvent{Type: eventType, Object: served, Stored: stored}, eventType != ""
}

// served is a stored object in the version the watch serves. An object that cannot be
// converted is a 500, as kube-apiserver's storage answers an event it cannot decode.
func (w *Watch) served(value []byte) ([]byte, error) {
	served, err := storedobj.ServedJSON(w.req.res, value)
	if errors.As(err, new(*storedobj.NotDecodableError)) {
		return nil, apierrors.NewInternalError(err)
	}
	return served, err
}

// bookmark is a BOOKMARK at revision; the one that ends a watch list's initial events carries
// the k8s.io/initial-events-end annotation.
func (w *Watch) bookmark(revision int64, initialEventsEnd bool) (WatchEvent, error) {
	object, err := bookmarkObject(w.req.res, revision, initialEventsEnd)
	return WatchEvent{Type: watch.Bookmark, Object: object, Stored: object}, err
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
func (w *Watch) selectedChange(ev *sqlstore.Event) (eventType watch.EventType, value []byte, err error) {
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
	m := ev.Memo(func() any { return decodeEventMeta(w.req.res, ev) }).(*eventMeta)
	now = ev.Op != sqlstore.OpDelete && w.sel.Matches(m.object)
	if ev.Prev != nil {
		before = w.sel.Matches(m.prev)
	} else if ev.Op == sqlstore.OpDelete {
		before = w.sel.Matches(m.object)
	}
	return now, before
}

// eventMeta is what selectors read from an event's object and previous state, decoded once per
// event for every watcher (Event.Memo).
type eventMeta struct {
	object, prev *selection.Decoded
}

func decodeEventMeta(res *resource.Resource, ev *sqlstore.Event) any {
	m := &eventMeta{object: selection.Decode(res, ev.Object.Value)}
	if ev.Prev != nil {
		m.prev = selection.Decode(res, ev.Prev.Value)
	}
	return m
}

// withResourceVersion is a stored object with its resourceVersion replaced: the state an object
// had before it left a watch's selection, sent at the revision it left.
func withResourceVersion(value []byte, revision int64) ([]byte, error) {
	obj, err := storedobj.DecodeStored(value)
	if err != nil {
		return nil, err
	}
	obj.SetResourceVersion(revisionString(revision))
	return json.Marshal(obj.Object)
}

// bookmarkSchedule times a watch's bookmarks as kube-apiserver's cacher does: every interval, and
// once more shortly before the watch's deadline.
type bookmarkSchedule struct {
	timer    *time.Timer
	interval time.Duration
	deadline time.Time
}

func newBookmarkSchedule(ctx context.Context, enabled bool, interval time.Duration) *bookmarkSchedule {
	b := &bookmarkSchedule{interval: interval}
	if !enabled {
		return b
	}
	b.deadline, _ = ctx.Deadline()
	b.timer = time.NewTimer(time.Hour)
	b.next()
	return b
}

// next arms the timer for the next bookmark, if there is one before the deadline.
func (b *bookmarkSchedule) next() {
	now := time.Now()
	at := now.Add(b.interval)
	if !b.deadline.IsZero() {
		if last := b.deadline.Add(-bookmarkBeforeTimeout); last.Before(at) {
			at = last
		}
	}
	if at.Before(now) {
		b.stop()
		return
	}
	b.timer.Reset(at.Sub(now))
}

// c is the channel the next bookmark is due on; nil (never ready) without bookmarks.
func (b *bookmarkSchedule) c() <-chan time.Time {
	if b.timer == nil {
		return nil
	}
	return b.timer.C
}

func (b *bookmarkSchedule) stop() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
}
