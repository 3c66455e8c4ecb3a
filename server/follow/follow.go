// Package follow is how in-process controllers and caches keep up with storage: list a
// resource, then watch it from the list's revision, relisting whenever the watch ends; and a
// work queue for the changes they act on.
package follow

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/sqlkube/sqlkube/sqlstore"
)

// Storage is what following needs from the database layer. *sqlstore.Store implements it.
type Storage interface {
	List(ctx context.Context, opts sqlstore.ListOptions, each func(sqlstore.Object) error) (sqlstore.ListResult, error)
	Watch(ctx context.Context, opts sqlstore.WatchOptions) (*sqlstore.Watcher, error)
}

// The store this package is run on implements Storage.
var _ Storage = (*sqlstore.Store)(nil)

// Retry is how long followers wait before relisting after a watch failed, and
// before looking again at work that could not finish (objects held by finalizers, conflicts).
const Retry = time.Second

// Observer is told a resource's objects, then every change after them. The objects of a list
// come one at a time, as storage reads them, so that following a resource of a million objects
// costs the memory of what the observer keeps, not of the list.
type Observer interface {
	// Relisting starts a (re)list. Listed then gives each object of the resource, in key order,
	// and ListDone ends the list with the revision it was read at. A list that fails part way is
	// started again with Relisting, without a ListDone.
	Relisting()
	Listed(o sqlstore.Object)
	ListDone(revision int64)
	// Changed gives one committed write after that revision.
	Changed(ev *sqlstore.Event)
}

// LapseObserver is an Observer that must know when it stops following storage: from the end of
// a watch (a failure, or ctx ending) until the next ListDone, it may miss changes.
type LapseObserver interface {
	WatchEnded()
}

// Narrowed is an Observer whose lists need only some of the objects: NarrowList sets the list's
// ValueContains or Marked, and storage drops the others, so that a start or a relist reads only
// what the observer keeps. Changes all come.
type Narrowed interface {
	NarrowList(opts *sqlstore.ListOptions)
}

// Resource lists a resource and watches it from the list's revision until ctx ends, relisting
// whenever the watch fails (compaction, a slow consumer, the database), as the CRD sync does:
// storage, not this replica's requests, is what the controllers follow.
func Resource(ctx context.Context, store Storage, log *slog.Logger, resource string, o Observer) {
	for {
		revision, err := listResource(ctx, store, resource, o)
		if err == nil {
			err = watchResource(ctx, store, resource, revision, o)
			if lapse, ok := o.(LapseObserver); ok {
				lapse.WatchEnded()
			}
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn("controller watch ended; relisting", "resource", resource, "err", err)
		if !Sleep(ctx, Retry) {
			return
		}
	}
}

// listResource streams the resource's objects to o from one snapshot of storage.
func listResource(ctx context.Context, store Storage, resource string, o Observer) (int64, error) {
	o.Relisting()
	opts := sqlstore.ListOptions{Resource: resource, Bulk: true}
	if narrowed, ok := o.(Narrowed); ok {
		narrowed.NarrowList(&opts)
	}
	list, err := store.List(ctx, opts, func(obj sqlstore.Object) error {
		o.Listed(obj)
		return nil
	})
	if err != nil {
		return 0, err
	}
	o.ListDone(list.Revision)
	return list.Revision, nil
}

func watchResource(ctx context.Context, store Storage, resource string, revision int64, o Observer) error {
	w, err := store.Watch(ctx, sqlstore.WatchOptions{Resource: resource, After: revision})
	if err != nil {
		return err
	}
	defer w.Close()
	for ev := range w.Events() {
		if ev.Err != nil { // an unreadable value: relist, which reports it
			return ev.Err
		}
		if !ev.Progress {
			o.Changed(ev)
		}
	}
	if err := w.Err(); err != nil {
		return err
	}
	return errors.New("watch closed")
}

// Sleep waits for d; false if ctx ended first.
func Sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
