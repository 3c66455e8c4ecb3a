package registry

import (
	"context"
	"errors"
	"iter"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/registry/watchevents"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

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
	opts *internalversion.ListOptions
	// events turns the store's events into the client's.
	events    *watchevents.Converter
	namespace string // the namespace storage narrows the watch to
	// indexKey is the key of the store's index the selection pins, if any (indexed): storage
	// then offers the watch only the events filed under it.
	indexKey string
	indexed  bool
	// floor is the revision the changes sent start after: the one asked for, or the snapshot of
	// the initial events. No change at or below it is sent.
	floor int64
	// initial pulls the events of the start (the initial events), nil once they are all out.
	initial     func() (watchevents.Event, bool)
	stopInitial func()
	// watcher is the store's watch of the changes, nil until the start is done.
	watcher   *sqlstore.Watcher
	bookmarks *watchevents.Schedule
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
	w := &Watch{reg: r, ctx: ctx, req: newRequest(Ref{Resource: ref.Resource, Namespace: ref.Namespace}, nil, "", nil),
		events: watchevents.NewConverter(ref.Resource, sel), namespace: ref.Namespace, opts: opts, floor: start}
	if w.namespace == "" && ref.Resource.Namespaced {
		w.namespace = sel.Namespace()
	}
	w.indexKey, w.indexed = sel.IndexKey()
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
func (w *Watch) Next(wake <-chan time.Time) (ev watchevents.Event, ok bool) {
	switch {
	case w.done:
		return watchevents.Event{}, false
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
		w.bookmarks.Stop()
	}
}

// nextInitial returns the start's next event; once the start is done, none, so that the caller
// sends them all before the watch waits.
func (w *Watch) nextInitial() (watchevents.Event, bool) {
	if ev, ok := w.initial(); ok {
		w.done = ev.Type == watch.Error
		return ev, true
	}
	w.stopInitial()
	w.initial, w.stopInitial = nil, nil
	w.bookmarks = watchevents.NewSchedule(w.ctx, w.opts.AllowWatchBookmarks, w.reg.bookmarkInterval())
	return watchevents.Event{}, false
}

func (r *Registry) bookmarkInterval() time.Duration {
	if r.opts.WatchBookmarkInterval > 0 {
		return r.opts.WatchBookmarkInterval
	}
	return watchevents.DefaultBookmarkInterval
}

// startEvents are the events of the watch's start, which ends with the store's watch of the
// changes: the initial events if asked for, or an ERROR event if the start failed.
func (w *Watch) startEvents(yield func(watchevents.Event) bool) {
	if err := w.start(yield); err != nil && !errors.Is(err, errStopped) {
		yield(watchevents.Error(err))
	}
}

// errStopped ends the initial events when the caller stops taking them.
var errStopped = errors.New("watch stopped")

// start sends the initial events to yield if asked for, then starts the store's watch where
// the changes the client gets begin.
func (w *Watch) start(yield func(watchevents.Event) bool) error {
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
func (w *Watch) sendInitialEvents(minRevision int64, yield func(watchevents.Event) bool) (int64, error) {
	if minRevision > 0 {
		if err := w.reg.WaitForRevision(w.ctx, minRevision); err != nil {
			return 0, err
		}
	}
	opts := sqlstore.ListOptions{Resource: w.req.res.StorageName, Namespace: w.namespace, Filter: w.events.Filter()}
	// stopped is why the initial events stopped before the list's end: an object that cannot be
	// served, or the caller's stop.
	var stopped error
	result, err := w.reg.store.List(w.ctx, opts, func(o sqlstore.Object) error {
		served, err := w.events.Served(o.Value)
		if err != nil {
			stopped = err
		} else if !yield(watchevents.Event{Type: watch.Added, Object: served, Stored: o.Value}) {
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

func (w *Watch) sendBookmark(revision int64, initialEventsEnd bool, yield func(watchevents.Event) bool) error {
	ev, err := w.events.Bookmark(revision, initialEventsEnd)
	if err != nil {
		return err
	}
	if !yield(ev) {
		return errStopped
	}
	return nil
}

// watchIndex is the store's index of res's events, one per served resource version, made on
// first use: the watches sharing it share each event's keys. A CRD's changes make new
// resources of the same version, which keep the first one's index: their keys are names and
// labels, read alike for each (selection.FieldsKey).
func (r *Registry) watchIndex(res *resource.Resource) *sqlstore.Index {
	gvr := schema.GroupVersionResource{Group: res.Group, Version: res.Version, Resource: res.Name}
	if idx, ok := r.watchIndexes.Load(gvr); ok {
		return idx.(*sqlstore.Index)
	}
	idx, _ := r.watchIndexes.LoadOrStore(gvr, watchevents.NewIndex(res))
	return idx.(*sqlstore.Index)
}

// watchAfter starts the store's watch after revision. A revision the store has not reached yet
// is not an error, as in kube-apiserver's watch cache: the watch starts at the current revision
// and skips the changes up to the requested one.
func (w *Watch) watchAfter(revision int64) (*sqlstore.Watcher, error) {
	opts := sqlstore.WatchOptions{Resource: w.req.res.StorageName, Namespace: w.namespace, After: revision}
	if w.indexed {
		opts.Index, opts.Key = w.reg.watchIndex(w.req.res), w.indexKey
	}
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
func (w *Watch) nextChange(wake <-chan time.Time) (watchevents.Event, bool) {
	events := w.watcher.Events()
	for {
		if w.returned && len(events) == 0 {
			w.returned = false
			return watchevents.Event{}, false
		}
		select {
		case <-w.ctx.Done():
			return watchevents.Event{}, false
		case <-wake:
			return watchevents.Event{}, false
		case <-w.bookmarks.C():
			w.watcher.RequestProgress()
			w.bookmarks.Next()
		case ev, open := <-events:
			if !open {
				return w.end()
			}
			out, ok := w.events.Change(ev, w.floor)
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
func (w *Watch) end() (watchevents.Event, bool) {
	w.done = true
	err := w.watcher.Err()
	if err == nil || errors.Is(err, sqlstore.ErrWatcherTooSlow) || errors.Is(err, sqlstore.ErrClosed) {
		return watchevents.Event{}, false
	}
	return watchevents.Error(storedobj.StorageError(err, schema.GroupResource{}, "")), true
}
