package gc

import (
	"bytes"
	"context"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sqlkube/sqlkube/server/controllers"
	"github.com/sqlkube/sqlkube/server/follow"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// garbageCollector does what kube-controller-manager's garbage collector does with
// ownerReferences: it deletes objects whose owners are all gone, orphans an owner's dependents
// (orphan finalizer), and deletes them before their owner (foregroundDeletion finalizer).
//
// Finding an owner's dependents must not scan every object of every type on each deletion, and
// seeing owners go needs a watch of every type anyway. So it keeps an index of the objects that
// have ownerReferences, built from a list and watch of every stored type (CRD types included,
// followed as the registry starts serving them). The index only answers "who refers to this
// uid": whether an owner exists, and the state of an object it acts on, are always read from
// storage just before the (conditional) write.
type garbageCollector struct {
	deps  controllers.Deps
	queue *follow.Queue[gcItem]

	mu         sync.Mutex
	owned      map[sqlstore.Key]ownedObject // the objects that have ownerReferences
	dependents map[types.UID]map[sqlstore.Key]bool
}

// ownedObject is what the index keeps of an object with ownerReferences.
type ownedObject struct {
	uid  types.UID
	refs []metav1.OwnerReference
}

// gcItem is a unit of work: look at key as a dependent (do its owners still exist?) or, with
// owner set, as an owner being deleted with the orphan or foregroundDeletion finalizer.
type gcItem struct {
	key   sqlstore.Key
	owner bool
}

// Run runs the garbage collector until ctx ends.
func Run(ctx context.Context, deps controllers.Deps) {
	gc := newGarbageCollector(deps)
	var initialLists sync.WaitGroup
	changed := deps.Catalog.Changed()
	followers := map[string]context.CancelFunc{}
	gc.syncFollowers(ctx, followers, &initialLists)
	go gc.followTypes(ctx, followers, changed)
	// Acting before every type has been listed once could find no dependents for an owner
	// whose dependents are simply not indexed yet, as the real collector waits for its caches.
	if !waitCtx(ctx, &initialLists) {
		return
	}
	gc.work(ctx)
}

func newGarbageCollector(deps controllers.Deps) *garbageCollector {
	return &garbageCollector{
		deps:       deps,
		queue:      follow.NewQueue[gcItem](),
		owned:      map[sqlstore.Key]ownedObject{},
		dependents: map[types.UID]map[sqlstore.Key]bool{},
	}
}

// waitCtx waits for wg; false if ctx ended first.
func waitCtx(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

func (gc *garbageCollector) work(ctx context.Context) {
	for {
		item, ok := gc.queue.Next(ctx)
		if !ok {
			return
		}
		if err := gc.process(ctx, item); err != nil && ctx.Err() == nil {
			gc.deps.Log.Debug("garbage collector: retrying", "resource", item.key.Resource, "namespace", item.key.Namespace, "name", item.key.Name, "err", err)
			gc.queue.AddAfter(ctx, item, follow.Retry)
		}
	}
}

func (gc *garbageCollector) process(ctx context.Context, item gcItem) error {
	if item.owner {
		return gc.processOwner(ctx, item.key)
	}
	return gc.processDependent(ctx, item.key)
}

// followTypes keeps a follower for every stored type the registry serves, starting and stopping
// them as CRD types come and go, until ctx ends.
func (gc *garbageCollector) followTypes(ctx context.Context, followers map[string]context.CancelFunc, changed <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		changed = gc.deps.Catalog.Changed()
		gc.syncFollowers(ctx, followers, nil)
	}
}

// syncFollowers starts following the types served now that have no follower, and stops those
// no longer served. With initial set, it is done once each new follower has listed its type.
func (gc *garbageCollector) syncFollowers(ctx context.Context, followers map[string]context.CancelFunc, initial *sync.WaitGroup) {
	resources := gc.deps.Catalog.StorageResources()
	for name := range resources {
		if _, ok := followers[name]; ok {
			continue
		}
		observer := &gcObserver{gc: gc, resource: name}
		if initial != nil {
			initial.Add(1)
			observer.firstList = sync.OnceFunc(initial.Done)
		}
		followCtx, cancel := context.WithCancel(ctx)
		followers[name] = cancel
		go func() {
			follow.Resource(followCtx, gc.deps.Store, gc.deps.Log, name, observer)
			if observer.firstList != nil {
				observer.firstList() // never listed: no one waits forever
			}
		}()
	}
	for name, cancel := range followers {
		if _, ok := resources[name]; !ok {
			cancel()
			delete(followers, name)
			gc.forgetResource(name)
		}
	}
}

// gcObserver feeds one type's objects and changes to the collector.
type gcObserver struct {
	gc        *garbageCollector
	resource  string
	firstList func() // nil after the start
	listedAny bool
	// present are the indexed objects of the list in progress: only those, so that listing a
	// type of a million objects holds no more than the index does.
	present map[sqlstore.Key]bool
}

func (o *gcObserver) Relisting() {
	o.present = map[sqlstore.Key]bool{}
}

func (o *gcObserver) Listed(obj sqlstore.Object) {
	o.gc.observe(obj)
	if o.gc.isIndexed(obj.Key) {
		o.present[obj.Key] = true
	}
}

func (o *gcObserver) ListDone(int64) {
	o.gc.relisted(o.resource, o.present, o.listedAny)
	o.present = nil
	o.listedAny = true
	if o.firstList != nil {
		o.firstList()
	}
}

func (o *gcObserver) Changed(ev *sqlstore.Event) {
	if ev.Op == sqlstore.OpDelete {
		o.gc.gone(ev.Object)
		return
	}
	o.gc.observe(ev.Object)
}

// relisted ends a type's full list, whose objects it observed, present those it indexed.
// Indexed objects of that type missing from it went while the watch was down (or no longer
// concern the collector). After such a gap, owners of that type without ownerReferences (so not
// indexed) may have gone unseen too, so every indexed dependent is looked at again.
func (gc *garbageCollector) relisted(resource string, present map[sqlstore.Key]bool, afterGap bool) {
	for _, key := range gc.indexedKeys(func(k sqlstore.Key) bool { return k.Resource == resource && !present[k] }) {
		gc.queueAfterDeletion(key, gc.forget(key))
	}
	if afterGap {
		for _, key := range gc.indexedKeys(func(sqlstore.Key) bool { return true }) {
			gc.queue.Add(gcItem{key: key})
		}
	}
}

// observe takes an object's new state: it indexes its ownerReferences, queues it as a dependent
// when they changed, queues the owners it no longer refers to (a foreground deletion may be
// waiting for that), and queues it as an owner when it is being deleted with the orphan or
// foregroundDeletion finalizer.
func (gc *garbageCollector) observe(o sqlstore.Object) {
	if !MayConcernCollector(o.Value) && !gc.isIndexed(o.Key) {
		return
	}
	var obj ownershipObject
	if err := storedobj.UnmarshalStored(o.Value, &obj); err != nil {
		return
	}
	meta := &obj.Metadata
	if meta.DeletionTimestamp != nil && slices.ContainsFunc(meta.Finalizers, registry.IsPropagationFinalizer) {
		gc.queue.Add(gcItem{key: o.Key, owner: true})
	}
	before, existed := gc.index(o.Key, ownedObject{uid: meta.UID, refs: meta.OwnerReferences})
	if len(meta.OwnerReferences) > 0 && (!existed || before.uid != meta.UID || !slices.EqualFunc(before.refs, meta.OwnerReferences, sameOwnerReference)) {
		gc.queue.Add(gcItem{key: o.Key})
	}
	for _, ref := range before.refs {
		if !slices.ContainsFunc(meta.OwnerReferences, func(r metav1.OwnerReference) bool { return sameOwnerReference(r, ref) }) {
			gc.queueOwner(o.Key, ref)
		}
	}
}

// MayConcernCollector says whether a stored object may have ownerReferences or be being
// deleted. Most writes have neither, and the collector sees every write: looking for the two
// field names (which may also appear in data, making this only a pre-check) is much cheaper
// than decoding the object. It is also the store's Mark (apiserver.StoreMark), so that storage
// indexes the objects the collector lists.
func MayConcernCollector(value []byte) bool {
	return slices.ContainsFunc(collectorFields, func(field []byte) bool { return bytes.Contains(value, field) })
}

// collectorFields are the field names MayConcernCollector looks for.
var collectorFields = [][]byte{[]byte(`"ownerReferences"`), []byte(`"deletionTimestamp"`)}

// NarrowList has storage list only the objects that may concern the collector: the marked ones
// (see MayConcernCollector), and of those written before marks, the ones naming the fields. A
// start on a million objects without ownerReferences reads none of them.
func (o *gcObserver) NarrowList(opts *sqlstore.ListOptions) {
	opts.Marked, opts.ValueContains = true, collectorFields
}

// ownershipObject is the part of a stored object the collector follows. It sees every write,
// so it decodes only these fields: the whole ObjectMeta (managedFields above all) cost about a
// tenth of the CPU of a create.
type ownershipObject struct {
	Metadata struct {
		UID               types.UID               `json:"uid"`
		DeletionTimestamp *metav1.Time            `json:"deletionTimestamp"`
		Finalizers        []string                `json:"finalizers"`
		OwnerReferences   []metav1.OwnerReference `json:"ownerReferences"`
	} `json:"metadata"`
}

// gone takes an object's deletion: its dependents may now have no owner left, and its owners
// may be waiting for it (foreground deletion).
func (gc *garbageCollector) gone(o sqlstore.Object) {
	var obj ownershipObject
	if err := storedobj.UnmarshalStored(o.Value, &obj); err != nil {
		return
	}
	gc.forget(o.Key)
	gc.queueAfterDeletion(o.Key, ownedObject{uid: obj.Metadata.UID, refs: obj.Metadata.OwnerReferences})
}

// queueAfterDeletion queues the dependents and the owners of the deleted object o at key.
func (gc *garbageCollector) queueAfterDeletion(key sqlstore.Key, o ownedObject) {
	for _, dependent := range gc.dependentsOf(o.uid) {
		gc.queue.Add(gcItem{key: dependent})
	}
	for _, ref := range o.refs {
		gc.queueOwner(key, ref)
	}
}

// queueOwner queues the owner ref names (from the dependent at key) to be looked at as an
// owner being deleted.
func (gc *garbageCollector) queueOwner(dependent sqlstore.Key, ref metav1.OwnerReference) {
	if key, ok := gc.ownerKey(dependent, ref); ok {
		gc.queue.Add(gcItem{key: key, owner: true})
	}
}

func sameOwnerReference(a, b metav1.OwnerReference) bool {
	return a.UID == b.UID && a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Name == b.Name &&
		(a.BlockOwnerDeletion != nil && *a.BlockOwnerDeletion) == (b.BlockOwnerDeletion != nil && *b.BlockOwnerDeletion)
}

// index records o as the object at key (forgetting key when o has no ownerReferences) and
// returns what was recorded before.
func (gc *garbageCollector) index(key sqlstore.Key, o ownedObject) (before ownedObject, existed bool) {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	before, existed = gc.owned[key]
	gc.unindexLocked(key)
	if len(o.refs) == 0 {
		return before, existed
	}
	gc.owned[key] = o
	for _, ref := range o.refs {
		if gc.dependents[ref.UID] == nil {
			gc.dependents[ref.UID] = map[sqlstore.Key]bool{}
		}
		gc.dependents[ref.UID][key] = true
	}
	return before, existed
}

// isIndexed says whether the index holds key.
func (gc *garbageCollector) isIndexed(key sqlstore.Key) bool {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	_, ok := gc.owned[key]
	return ok
}

// forget drops key from the index and returns what it held.
func (gc *garbageCollector) forget(key sqlstore.Key) ownedObject {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	was := gc.owned[key]
	gc.unindexLocked(key)
	return was
}

func (gc *garbageCollector) unindexLocked(key sqlstore.Key) {
	for _, ref := range gc.owned[key].refs {
		delete(gc.dependents[ref.UID], key)
		if len(gc.dependents[ref.UID]) == 0 {
			delete(gc.dependents, ref.UID)
		}
	}
	delete(gc.owned, key)
}

// forgetResource drops a type the registry no longer serves (its CRD is gone).
func (gc *garbageCollector) forgetResource(resource string) {
	for _, key := range gc.indexedKeys(func(k sqlstore.Key) bool { return k.Resource == resource }) {
		gc.forget(key)
	}
}

func (gc *garbageCollector) indexedKeys(keep func(sqlstore.Key) bool) []sqlstore.Key {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	var keys []sqlstore.Key
	for key := range gc.owned {
		if keep(key) {
			keys = append(keys, key)
		}
	}
	return keys
}

// dependentsOf lists the indexed objects that refer to owner.
func (gc *garbageCollector) dependentsOf(owner types.UID) []sqlstore.Key {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	keys := make([]sqlstore.Key, 0, len(gc.dependents[owner]))
	for key := range gc.dependents[owner] {
		keys = append(keys, key)
	}
	return keys
}

// blockingDependentsOf lists the indexed dependents whose reference to owner has
// blockOwnerDeletion set: those a foreground deletion of owner waits for.
func (gc *garbageCollector) blockingDependentsOf(owner types.UID) []sqlstore.Key {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	var keys []sqlstore.Key
	for key := range gc.dependents[owner] {
		if slices.ContainsFunc(gc.owned[key].refs, func(r metav1.OwnerReference) bool {
			return r.UID == owner && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion
		}) {
			keys = append(keys, key)
		}
	}
	return keys
}
