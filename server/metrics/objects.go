package metrics

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"
	etcd3metrics "k8s.io/apiserver/pkg/storage/etcd3/metrics"

	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// Lister is what counting objects reads from storage: one object of a stored type's list, which
// says how many more there are. *sqlstore.Store implements it.
type Lister interface {
	List(ctx context.Context, opts sqlstore.ListOptions, each func(sqlstore.Object) error) (sqlstore.ListResult, error)
}

// StoredTypes is the set of types whose objects are counted. *catalog.Catalog implements it.
type StoredTypes interface {
	// StorageResources is one served Resource per stored type, by storage name.
	StorageResources() map[string]*resource.Resource
}

var (
	_ Lister      = (*sqlstore.Store)(nil)
	_ StatsSource = (*sqlstore.Store)(nil)
)

// objectCountInterval is how often apiserver_storage_objects is refreshed, as kube-apiserver does.
const objectCountInterval = time.Minute

// Start registers the metrics, makes the sqlkube_* gauges report store's state when it can tell
// it (a StatsSource), and keeps apiserver_storage_objects current for every type of types until
// ctx ends.
func Start(ctx context.Context, store Lister, types StoredTypes) {
	Register()
	if src, ok := store.(StatsSource); ok {
		ReportOn(src)
	}
	counts := &objectCounts{store: store, types: types}
	go counts.run(ctx, objectCountInterval)
}

// objectCounts sets apiserver_storage_objects from the database's counts.
type objectCounts struct {
	store Lister
	types StoredTypes
}

// run counts the objects every interval until ctx ends, starting at once.
func (c *objectCounts) run(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		c.countAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// countAll sets apiserver_storage_objects for every stored type.
func (c *objectCounts) countAll(ctx context.Context) {
	for _, r := range c.types.StorageResources() {
		count, err := c.count(ctx, r.StorageName)
		gr := schema.GroupResource{Group: r.Group, Resource: r.Name}
		etcd3metrics.UpdateStoreStats(gr, storage.Stats{ObjectCount: count}, err)
	}
}

// count counts the objects stored under a storage name: a one-object list says how many more
// there are.
func (c *objectCounts) count(ctx context.Context, storageName string) (int64, error) {
	var n int64
	res, err := c.store.List(ctx, sqlstore.ListOptions{Resource: storageName, Limit: 1}, func(sqlstore.Object) error { n++; return nil })
	if err != nil || !res.More {
		return n, err
	}
	return n + res.Remaining, nil
}
