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

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/crdtype"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// crdSyncRetry is how long the CRD sync waits before relisting after its watch failed.
const crdSyncRetry = time.Second

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
// apiextensions-apiserver's naming controller would do about the change.
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

// renderAtRevision renders obj as stored at the revision its write is given.
func renderAtRevision(obj *unstructured.Unstructured) func(int64) ([]byte, error) {
	return func(revision int64) ([]byte, error) {
		obj.SetResourceVersion(strconv.FormatInt(revision, 10))
		return json.Marshal(obj.Object)
	}
}
