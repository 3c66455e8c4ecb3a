package controllers

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sqlkube/sqlkube/server/follow"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// NameSyncer is a controller that works on the objects of one cluster-scoped resource by name,
// one pass at a time, and reads them again on every pass.
type NameSyncer interface {
	// NeedsSync reports whether the stored object o awaits a pass; only its name is kept.
	NeedsSync(o sqlstore.Object) bool
	// Sync makes one pass over the object name; done is false when it must be looked at again.
	Sync(ctx context.Context, name string) (done bool, err error)
}

// SyncNames follows the objects of the resource stored as storageName, those already stored and
// those to come, and runs s.Sync, one name at a time, on each that s.NeedsSync, until ctx ends. A
// name whose pass is not done is queued again after follow.Retry; a failed pass is logged as
// failure, with the name and the error.
func SyncNames(ctx context.Context, deps Deps, storageName string, s NameSyncer, failure string) {
	queue := follow.NewQueue[string]()
	go follow.Resource(ctx, deps.Store, deps.Log, storageName, nameObserver{s, queue})
	for {
		name, ok := queue.Next(ctx)
		if !ok {
			return
		}
		done, err := s.Sync(ctx, name)
		if err != nil && ctx.Err() == nil {
			deps.Log.Warn(failure, "name", name, "err", err)
		}
		if !done {
			queue.AddAfter(ctx, name, follow.Retry)
		}
	}
}

// nameObserver queues the names of the stored objects that await a pass; deletions need none.
type nameObserver struct {
	s     NameSyncer
	queue *follow.Queue[string]
}

func (o nameObserver) Relisting()                 {}
func (o nameObserver) Listed(obj sqlstore.Object) { o.observe(obj) }
func (o nameObserver) ListDone(int64)             {}

func (o nameObserver) Changed(ev *sqlstore.Event) {
	if ev.Op != sqlstore.OpDelete {
		o.observe(ev.Object)
	}
}

func (o nameObserver) observe(obj sqlstore.Object) {
	if o.s.NeedsSync(obj) {
		o.queue.Add(obj.Name)
	}
}

// WriteOutcome reads the error of a pass's last conditional write to the object it works on:
// NotFound means another replica finished the work first (done); Conflict that the object
// changed meanwhile, so the next pass looks again. Other errors are returned, not done.
func WriteOutcome(err error) (done bool, _ error) {
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return true, nil
	case apierrors.IsConflict(err):
		return false, nil
	}
	return false, err
}
