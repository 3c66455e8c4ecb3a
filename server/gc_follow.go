package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sqlkube/sqlkube/sqlstore"
)

// controllerManager is who the in-process controllers write as (managedFields), as
// kube-controller-manager's namespace controller and garbage collector would appear.
const controllerManager = "kube-controller-manager"

// controllerRetry is how long the controllers wait before relisting after a watch failed, and
// before looking again at work that could not finish (objects held by finalizers, conflicts).
const controllerRetry = time.Second

// startControllers runs, until ctx ends, the controllers kube-controller-manager would run for
// deletion to behave as on a cluster: the namespace controller and the garbage collector.
// Every replica runs them: they work from storage and their writes are conditional, so two
// replicas doing the same step cost a harmless conflict.
func (s *Server) startControllers(ctx context.Context) {
	go s.runNamespaceController(ctx)
	go s.runGarbageCollector(ctx)
}

// resourceObserver is told a resource's objects, then every change after them.
type resourceObserver interface {
	// listed gives every object of the resource at revision, after a (re)list.
	listed(objects []sqlstore.Object, revision int64)
	// changed gives one committed write after that revision.
	changed(ev *sqlstore.Event)
}

// lapseObserver is a resourceObserver that must know when it stops following storage: from the
// end of a watch (a failure, or ctx ending) until the next listed, it may miss changes.
type lapseObserver interface {
	watchEnded()
}

// followResource lists a resource and watches it from the list's revision until ctx ends,
// relisting whenever the watch fails (compaction, a slow consumer, the database), as the CRD
// sync does: storage, not this replica's requests, is what the controllers follow.
func followResource(ctx context.Context, s *Server, resource string, o resourceObserver) {
	for {
		revision, err := listResource(ctx, s.store, resource, o)
		if err == nil {
			err = watchResource(ctx, s.store, resource, revision, o)
			if lapse, ok := o.(lapseObserver); ok {
				lapse.watchEnded()
			}
		}
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("controller watch ended; relisting", "resource", resource, "err", err)
		if !sleepCtx(ctx, controllerRetry) {
			return
		}
	}
}

func listResource(ctx context.Context, store Storage, resource string, o resourceObserver) (int64, error) {
	var objects []sqlstore.Object
	list, err := store.List(ctx, sqlstore.ListOptions{Resource: resource}, func(obj sqlstore.Object) error {
		objects = append(objects, obj)
		return nil
	})
	if err != nil {
		return 0, err
	}
	o.listed(objects, list.Revision)
	return list.Revision, nil
}

func watchResource(ctx context.Context, store Storage, resource string, revision int64, o resourceObserver) error {
	w, err := store.Watch(ctx, sqlstore.WatchOptions{Resource: resource, After: revision})
	if err != nil {
		return err
	}
	defer w.Close()
	for ev := range w.Events() {
		if !ev.Progress {
			o.changed(ev)
		}
	}
	if err := w.Err(); err != nil {
		return err
	}
	return errors.New("watch closed")
}

// sleepCtx waits for d; false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// storageResources lists one served Resource per stored type (built-ins and CRD types), the
// one serving the storage version, so that its objects need no conversion.
func (g *Registry) storageResources() map[string]*Resource {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := map[string]*Resource{}
	for _, r := range g.resources {
		if prev, ok := out[r.StorageName]; !ok || (prev.NeedsConversion() && !r.NeedsConversion()) {
			out[r.StorageName] = r
		}
	}
	return out
}

// resourceForKind finds the resource serving kind at apiVersion, as a REST mapper would.
func (g *Registry) resourceForKind(apiVersion, kind string) (*Resource, bool) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, false
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	for _, r := range g.resources {
		if r.Group == gv.Group && r.Version == gv.Version && r.Kind == kind {
			return r, true
		}
	}
	return nil, false
}

// registryChanged returns a channel closed the next time the registry's types may change.
func (g *Registry) registryChanged() <-chan struct{} {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.advanced
}

// controllerRequest is a controller's request on the object res stores under key.
func controllerRequest(res *Resource, key sqlstore.Key) *request {
	return &request{
		res:       res,
		gr:        schema.GroupResource{Group: res.Group, Resource: res.Name},
		namespace: key.Namespace,
		name:      key.Name,
		manager:   controllerManager,
	}
}

// workQueue holds distinct pending items for one worker: an item added while queued is
// queued once, and one added while being processed is processed again afterwards, so no change
// is missed and none is handled twice at once.
type workQueue[T comparable] struct {
	mu      sync.Mutex
	pending []T
	queued  map[T]bool
	wake    chan struct{}
}

func newWorkQueue[T comparable]() *workQueue[T] {
	return &workQueue[T]{queued: map[T]bool{}, wake: make(chan struct{}, 1)}
}

func (q *workQueue[T]) add(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.queued[item] {
		return
	}
	q.queued[item] = true
	q.pending = append(q.pending, item)
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// addAfter queues item once d has passed, unless ctx ended.
func (q *workQueue[T]) addAfter(ctx context.Context, item T, d time.Duration) {
	go func() {
		if sleepCtx(ctx, d) {
			q.add(item)
		}
	}()
}

// next waits for an item; false once ctx ended.
func (q *workQueue[T]) next(ctx context.Context) (T, bool) {
	for {
		q.mu.Lock()
		if len(q.pending) > 0 {
			item := q.pending[0]
			q.pending = q.pending[1:]
			delete(q.queued, item)
			q.mu.Unlock()
			return item, true
		}
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			var zero T
			return zero, false
		case <-q.wake:
		}
	}
}
