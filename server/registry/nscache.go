package registry

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/sqlkube/sqlkube/server/follow"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// namespaceCache answers the namespace check every namespaced create makes (does the namespace
// exist, is it being deleted) without reading storage, as kube-apiserver's NamespaceLifecycle
// admission reads a namespace informer: it follows the stored namespaces (list, then watch from
// the list's revision, relisting after a failed watch).
//
// It does not answer (lookup's ok false), and the caller reads storage as the admission
// plugin's live lookup does:
//   - before its first list, and from the end of a watch until the next list;
//   - for a namespace it does not hold: one created a moment ago, on this replica or another,
//     may not have reached it yet;
//   - while it has not caught up with this process's latest namespace write, so that a request
//     following a write (a delete marking the namespace Terminating) never sees the state
//     before it. kube-apiserver forces a live lookup after a namespace deletion for the same
//     reason; the revision makes it exact.
//
// Another replica's namespace writes reach it through the change feed within milliseconds;
// until then it answers from the state before them, as an informer does.
type namespaceCache struct {
	written atomic.Int64 // revision of this process's latest namespace write

	mu       sync.RWMutex
	synced   bool
	revision int64 // the storage revision the cache reflects
	// terminating holds every namespace by name: true when it is being deleted.
	terminating map[string]bool

	// listing gathers a list in progress; only the follower's goroutine touches it.
	listing map[string]bool
}

func newNamespaceCache() *namespaceCache {
	return &namespaceCache{terminating: map[string]bool{}}
}

// followNamespaces makes the cache follow the stored namespaces until ctx ends. (The registry
// tells it of this process's own namespace writes; see Registry.write.)
func (r *Registry) followNamespaces(ctx context.Context) {
	go follow.Resource(ctx, r.store, r.log, r.namespaceResource.StorageName, r.namespaces)
}

// lookup says whether namespace is being deleted; ok is false when the cache cannot answer
// (see namespaceCache) and storage must be read.
func (c *namespaceCache) lookup(namespace string) (terminating, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.synced || c.revision < c.written.Load() {
		return false, false
	}
	terminating, ok = c.terminating[namespace]
	return terminating, ok
}

// wrote records that this process wrote a namespace at revision, before the write's reply.
func (c *namespaceCache) wrote(revision int64) {
	for {
		old := c.written.Load()
		if old >= revision || c.written.CompareAndSwap(old, revision) {
			return
		}
	}
}

// Relisting starts gathering the states of a new list; the cache keeps answering from the last
// one until it is done.
func (c *namespaceCache) Relisting() {
	c.listing = map[string]bool{}
}

func (c *namespaceCache) Listed(o sqlstore.Object) {
	if terminating, ok := cachedState(o.Value); ok {
		c.listing[o.Name] = terminating
	}
}

func (c *namespaceCache) ListDone(revision int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.terminating, c.revision, c.synced = c.listing, revision, true
	c.listing = nil
}

func (c *namespaceCache) Changed(ev *sqlstore.Event) {
	terminating, present := false, false
	if ev.Op != sqlstore.OpDelete {
		terminating, present = cachedState(ev.Object.Value)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if present {
		c.terminating[ev.Object.Name] = terminating
	} else {
		delete(c.terminating, ev.Object.Name)
	}
	c.revision = ev.Revision
}

// cachedState decodes a stored namespace for the cache. One that does not decode is left out
// (ok false): its lookups read storage, which reports the error.
func cachedState(value []byte) (terminating, ok bool) {
	terminating, err := namespaceTerminating(value)
	return terminating, err == nil
}

func (c *namespaceCache) WatchEnded() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.synced = false
}
