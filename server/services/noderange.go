package services

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"k8s.io/kubernetes/pkg/registry/core/service/allocator"

	"github.com/sqlkube/sqlkube/sqlstore"
)

// Storage is what the allocators and the replicas' leases keep their state in: the server's store.
type Storage interface {
	Get(ctx context.Context, key sqlstore.Key) (sqlstore.Object, error)
	Write(ctx context.Context, w sqlstore.Write) (sqlstore.Object, error)
	List(ctx context.Context, opts sqlstore.ListOptions, each func(sqlstore.Object) error) (sqlstore.ListResult, error)
}

// nodePortsKey is where the node port bitmap is kept: outside every served resource, as
// kube-apiserver keeps it in etcd at /registry/ranges/servicenodeports.
var nodePortsKey = sqlstore.Key{Resource: "ranges", Name: "servicenodeports"}

// storedRange is kube's allocation bitmap of a range (allocator.Interface) kept in the
// database, as kube-apiserver's allocator/storage.Etcd keeps it in etcd: every change reads the
// stored bitmap, applies the change and writes it back only if no one wrote it meanwhile (the
// store's compare-and-swap), so replicas on one database never hand out one item twice.
type storedRange struct {
	store Storage
	key   sqlstore.Key

	mu     sync.Mutex
	bitmap allocator.Snapshottable
	// revision is that of the stored bitmap the in-memory one holds; 0 when it must be read.
	revision int64
}

var _ allocator.Interface = (*storedRange)(nil)

// storedBitmap is the stored value: kube's RangeAllocation's range and data.
type storedBitmap struct {
	Range string `json:"range"`
	Data  []byte `json:"data"`
}

// errUnavailable is what an allocation that found nothing free returns inside update.
var errUnavailable = errors.New("unable to allocate")

func (r *storedRange) Allocate(item int) (bool, error) {
	err := r.update(func() error {
		ok, err := r.bitmap.Allocate(item)
		if err == nil && !ok {
			err = errUnavailable
		}
		return err
	})
	if errors.Is(err, errUnavailable) {
		return false, nil
	}
	return err == nil, err
}

func (r *storedRange) AllocateNext() (int, bool, error) {
	var item int
	err := r.update(func() error {
		var ok bool
		var err error
		item, ok, err = r.bitmap.AllocateNext()
		if err == nil && !ok {
			err = errUnavailable
		}
		return err
	})
	if errors.Is(err, errUnavailable) {
		return 0, false, nil
	}
	return item, err == nil, err
}

func (r *storedRange) Release(item int) error {
	return r.update(func() error { return r.bitmap.Release(item) })
}

// ForEach, Has and Free answer from the bitmap as last read or written, as kube's do.
func (r *storedRange) ForEach(f func(int)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bitmap.ForEach(f)
}

func (r *storedRange) Has(item int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bitmap.Has(item)
}

func (r *storedRange) Free() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bitmap.Free()
}

func (r *storedRange) Destroy() {}

// update applies change to the stored bitmap: read it (unless the in-memory one is current),
// change it, write it back conditionally, and start over if another writer came first.
func (r *storedRange) update(change func() error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx := context.Background()
	for {
		w, err := r.read(ctx)
		if err != nil {
			return err
		}
		if err := change(); err != nil {
			r.revision = 0 // the change may have been partly applied: read again next time
			return err
		}
		spec, data := r.bitmap.Snapshot()
		value, err := json.Marshal(storedBitmap{Range: spec, Data: data})
		if err != nil {
			return err
		}
		w.Render = func(int64) ([]byte, error) { return value, nil }
		stored, err := r.store.Write(ctx, w)
		if errors.Is(err, sqlstore.ErrConflict) || errors.Is(err, sqlstore.ErrExists) {
			r.revision = 0
			continue
		}
		if err != nil {
			r.revision = 0
			return err
		}
		r.revision = stored.Revision
		return nil
	}
}

// read brings the in-memory bitmap up to the stored one and returns the write that replaces
// it: an update at its revision, or the create of a missing one from an empty bitmap.
func (r *storedRange) read(ctx context.Context) (sqlstore.Write, error) {
	current, err := r.store.Get(ctx, r.key)
	if errors.Is(err, sqlstore.ErrNotFound) {
		spec, _ := r.bitmap.Snapshot()
		return sqlstore.Write{Op: sqlstore.OpCreate, Key: r.key}, r.bitmap.Restore(spec, nil)
	}
	if err != nil {
		return sqlstore.Write{}, err
	}
	if current.Revision != r.revision {
		var stored storedBitmap
		if err := json.Unmarshal(current.Value, &stored); err != nil {
			return sqlstore.Write{}, err
		}
		// A range changed since the bitmap was written (--service-node-port-range) is refused
		// with kube's own error.
		if err := r.bitmap.Restore(stored.Range, stored.Data); err != nil {
			return sqlstore.Write{}, err
		}
		r.revision = current.Revision
	}
	return sqlstore.Write{Op: sqlstore.OpUpdate, Key: r.key, ExpectedRevision: current.Revision}, nil
}
