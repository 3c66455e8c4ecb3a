package catalog

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/crdtype"
	"github.com/sqlkube/sqlkube/server/follow"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// How long the CRD sync waits before relisting after its watch failed, and before looking
// again at a CRD whose objects are not all gone yet (they have finalizers of their own).
const (
	crdSyncRetry    = time.Second
	crdCleanupRetry = time.Second
)

// loadCRDs lists the stored CRDs and serves them; it returns the list's revision.
func (g *Catalog) loadCRDs(ctx context.Context) (int64, error) {
	crds := map[string]*storedCRD{}
	list, err := g.store.List(ctx, sqlstore.ListOptions{Resource: builtin.CRDStorageName}, func(o sqlstore.Object) error {
		if c := g.decodeStoredCRD(o); c != nil {
			crds[c.crd.Name] = c
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	g.replaceCRDs(crds, list.Revision)
	for _, c := range crds {
		g.cleanUpIfDeleted(ctx, c.crd)
	}
	return list.Revision, nil
}

// decodeStoredCRD reads a stored CRD; one that does not decode is logged and not served.
func (g *Catalog) decodeStoredCRD(o sqlstore.Object) *storedCRD {
	crd, err := crdtype.DecodeJSON(o.Value)
	if err != nil {
		g.log.Error("stored CustomResourceDefinition does not decode; not serving it", "name", o.Name, "revision", o.Revision, "err", err)
		return nil
	}
	return &storedCRD{revision: o.Revision, crd: crd, served: crdtype.ServedResources(crd, g.converters, g.log)}
}

// syncCRDs follows the CRDs' changes in storage, whoever made them (this replica or another
// one on the same database), from revision until ctx ends. When the watch fails (compaction,
// a slow consumer, the database) it relists and watches again.
func (g *Catalog) syncCRDs(ctx context.Context, revision int64) {
	for {
		err := g.followCRDs(ctx, revision)
		if ctx.Err() != nil {
			return
		}
		g.log.Warn("CustomResourceDefinition watch ended; relisting", "err", err)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(crdSyncRetry):
			}
			if revision, err = g.loadCRDs(ctx); err == nil {
				break
			}
			g.log.Warn("relisting CustomResourceDefinitions failed", "err", err)
		}
	}
}

// followCRDs applies the CRD events after revision until the watch ends.
func (g *Catalog) followCRDs(ctx context.Context, revision int64) error {
	w, err := g.store.Watch(ctx, sqlstore.WatchOptions{Resource: builtin.CRDStorageName, After: revision})
	if err != nil {
		return err
	}
	defer w.Close()
	for ev := range w.Events() {
		if ev.Progress {
			g.advance(ev.Revision)
			continue
		}
		g.applyCRDEvent(ctx, ev)
	}
	if err := w.Err(); err != nil {
		return err
	}
	return errors.New("watch closed")
}

// applyCRDEvent serves a CRD's new state, or stops serving a deleted one, then does what
// apiextensions-apiserver's controllers would do about the change.
func (g *Catalog) applyCRDEvent(ctx context.Context, ev *sqlstore.Event) {
	g.mu.RLock()
	crds := maps.Clone(g.crds)
	g.mu.RUnlock()

	delete(crds, ev.Object.Name)
	if ev.Op == sqlstore.OpDelete {
		g.replaceCRDs(crds, ev.Revision)
		if deleted, err := crdtype.DecodeJSON(ev.Object.Value); err == nil {
			g.acceptWaitingNames(ctx, deleted.Spec.Group)
		}
		return
	}
	changed := g.decodeStoredCRD(ev.Object)
	if changed != nil {
		crds[changed.crd.Name] = changed
	}
	g.replaceCRDs(crds, ev.Revision)
	if changed != nil {
		g.cleanUpIfDeleted(ctx, changed.crd)
		g.acceptWaitingNames(ctx, changed.crd.Spec.Group)
	}
}

// acceptWaitingNames gives the names a change freed to a CRD of group still waiting for its
// names, as the naming controller does whenever a CRD of the group changes. One CRD at a time,
// oldest first: the event of that write brings the next one's turn, so two CRDs waiting for the
// same name cannot both get it. Every replica may try; only the first write applies.
func (g *Catalog) acceptWaitingNames(ctx context.Context, group string) {
	g.mu.RLock()
	var waiting []*storedCRD
	for _, c := range g.crds {
		if c.crd.Spec.Group == group && c.crd.DeletionTimestamp == nil && !apihelpers.IsCRDConditionTrue(c.crd, apiextensionsv1.NamesAccepted) {
			waiting = append(waiting, c)
		}
	}
	g.mu.RUnlock()
	slices.SortFunc(waiting, func(a, b *storedCRD) int {
		return cmp.Or(a.crd.CreationTimestamp.Compare(b.crd.CreationTimestamp.Time), cmp.Compare(a.crd.Name, b.crd.Name))
	})
	for _, c := range waiting {
		crd := c.crd.DeepCopy()
		crdtype.AcceptNames(crd, g.namesTakenInGroup)
		if reflect.DeepEqual(crd.Status, c.crd.Status) {
			continue
		}
		obj := &unstructured.Unstructured{}
		crdtype.Encode(crd, obj)
		_, err := g.store.Write(ctx, sqlstore.Write{Op: sqlstore.OpUpdate, Key: sqlstore.Key{Resource: builtin.CRDStorageName, Name: crd.Name},
			ExpectedRevision: c.revision, Render: renderAtRevision(obj)})
		if err != nil && !errors.Is(err, sqlstore.ErrConflict) && !errors.Is(err, sqlstore.ErrNotFound) {
			g.log.Warn("accepting the names of a CustomResourceDefinition", "name", crd.Name, "err", err)
		}
		return
	}
}

// cleanUpIfDeleted starts deleting the objects of a CRD marked for deletion, once per CRD in
// this process. Every replica does it; their writes conflict harmlessly.
func (g *Catalog) cleanUpIfDeleted(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) {
	if !crdtype.IsBeingCleanedUp(crd) {
		return
	}
	g.cleaningMu.Lock()
	defer g.cleaningMu.Unlock()
	if g.cleaning[crd.UID] {
		return
	}
	g.cleaning[crd.UID] = true
	go func() {
		defer func() {
			g.cleaningMu.Lock()
			delete(g.cleaning, crd.UID)
			g.cleaningMu.Unlock()
		}()
		g.cleanUp(ctx, crd.Name, crd.UID)
	}()
}

// cleanUp deletes the objects of the CRD name (while it is the one with uid and is marked for
// deletion), then removes the cleanup finalizer, which deletes the CRD unless other finalizers
// remain. It retries until done or ctx ends.
func (g *Catalog) cleanUp(ctx context.Context, name string, uid types.UID) {
	for {
		done, err := g.cleanUpOnce(ctx, name, uid)
		if done {
			return
		}
		if err != nil {
			g.log.Warn("cleaning up a deleted CustomResourceDefinition", "name", name, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(crdCleanupRetry):
		}
	}
}

// cleanUpOnce makes one pass: done is true when nothing is left to do.
func (g *Catalog) cleanUpOnce(ctx context.Context, name string, uid types.UID) (done bool, err error) {
	stored, err := g.store.Get(ctx, sqlstore.Key{Resource: builtin.CRDStorageName, Name: name})
	if errors.Is(err, sqlstore.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	crd, err := crdtype.DecodeJSON(stored.Value)
	if err != nil || crd.UID != uid || !crdtype.IsBeingCleanedUp(crd) {
		return true, err
	}
	outcome, err := g.deleteInstances(ctx, crd)
	if outcome == nil {
		return false, err
	}
	err = g.removeCleanupFinalizer(ctx, stored, crd, *outcome)
	return err == nil, err
}

// deleteInstances deletes the objects of a CRD being deleted. It returns the Terminating
// condition apiextensions-apiserver ends the cleanup with, or nil while objects remain.
func (g *Catalog) deleteInstances(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinitionCondition, error) {
	finished := func(reason, message string) *apiextensionsv1.CustomResourceDefinitionCondition {
		return &apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionFalse, Reason: reason, Message: message,
		}
	}
	switch {
	case g.isBuiltinStorage(crd.Name):
		// Its objects are a built-in's: a CRD never served under that name owns none.
		return finished("OverlappingBuiltInResource", "instances overlap with built-in resources in storage"), nil
	case !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established):
		return finished("NeverEstablished", "resource was never established"), nil
	}
	remaining, err := g.deleteObjects(ctx, crd.Name)
	if err != nil || remaining > 0 {
		return nil, err
	}
	return finished("InstanceDeletionCompleted", "removed all instances"), nil
}

// deleteObjects deletes every object of the type stored under resource and returns how many
// remain: objects with finalizers are marked for deletion and left to their controllers, as
// a delete collection would. Objects that changed or vanished meanwhile are left to the next pass.
func (g *Catalog) deleteObjects(ctx context.Context, resource string) (remaining int, err error) {
	err = follow.Pages(ctx, g.store, resource, "", func(page []sqlstore.Object) error {
		for _, o := range page {
			gone, err := g.deleteObject(ctx, o)
			if err != nil && !errors.Is(err, sqlstore.ErrNotFound) && !errors.Is(err, sqlstore.ErrConflict) {
				return err
			}
			if !gone {
				remaining++
			}
		}
		return nil
	})
	return remaining, err
}

// deleteObject deletes o, or marks it for deletion if it has finalizers; gone says it was deleted.
func (g *Catalog) deleteObject(ctx context.Context, o sqlstore.Object) (gone bool, err error) {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(o.Value); err != nil {
		return false, err
	}
	write := sqlstore.Write{Key: o.Key, ExpectedRevision: o.Revision, Render: renderAtRevision(obj)}
	if len(obj.GetFinalizers()) == 0 {
		write.Op = sqlstore.OpDelete
		_, err = g.store.Write(ctx, write)
		return err == nil, err
	}
	if obj.GetDeletionTimestamp() != nil {
		return false, nil
	}
	resource.MarkDeleting(obj)
	write.Op = sqlstore.OpUpdate
	_, err = g.store.Write(ctx, write)
	return false, err
}

// removeCleanupFinalizer ends a CRD's cleanup with its outcome: without other finalizers, the
// CRD is deleted.
func (g *Catalog) removeCleanupFinalizer(ctx context.Context, stored sqlstore.Object, crd *apiextensionsv1.CustomResourceDefinition, outcome apiextensionsv1.CustomResourceDefinitionCondition) error {
	apihelpers.CRDRemoveFinalizer(crd, crdtype.CleanupFinalizer)
	apihelpers.SetCRDCondition(crd, outcome)
	obj := &unstructured.Unstructured{}
	crdtype.Encode(crd, obj)
	write := sqlstore.Write{Op: sqlstore.OpUpdate, Key: stored.Key, ExpectedRevision: stored.Revision, Render: renderAtRevision(obj)}
	if len(crd.Finalizers) == 0 {
		write.Op = sqlstore.OpDelete
	}
	_, err := g.store.Write(ctx, write)
	if errors.Is(err, sqlstore.ErrNotFound) {
		return nil // another replica finished first
	}
	return err // on a conflict, the next pass looks again
}

// renderAtRevision renders obj as stored at the revision its write is given.
func renderAtRevision(obj *unstructured.Unstructured) func(int64) ([]byte, error) {
	return func(revision int64) ([]byte, error) {
		obj.SetResourceVersion(strconv.FormatInt(revision, 10))
		return json.Marshal(obj.Object)
	}
}

// isBuiltinStorage is true when resource is where a built-in type keeps its objects.
func (g *Catalog) isBuiltinStorage(resource string) bool {
	for _, r := range g.builtins {
		if r.StorageName == resource {
			return true
		}
	}
	return false
}
