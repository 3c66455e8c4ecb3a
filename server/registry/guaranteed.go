package registry

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// GuaranteedUpdate changes the stored object ref names with change and writes it, retried when
// a concurrent write wins the race, as kube-apiserver's storage GuaranteedUpdate does for the
// subresources that write an object without its type's strategy, admission or managedFields
// (a pod's binding). change gets the stored object as served; its error ends the update and
// is returned as it is. With dryRun nothing is written.
func (r *Registry) GuaranteedUpdate(ctx context.Context, ref Ref, dryRun bool, change func(obj *unstructured.Unstructured) error) (sqlstore.Object, error) {
	req := newRequest(ref, nil, "", nil)
	req.dryRun = dryRun
	for {
		current, err := r.store.Get(ctx, req.key())
		if err != nil {
			return sqlstore.Object{}, storedobj.StorageError(err, req.gr, req.name)
		}
		obj, err := storedobj.DecodeServed(req.res, current.Value)
		if err != nil {
			return sqlstore.Object{}, storedobj.ReadFailed(ref.Resource, ref.Namespace, ref.Name, err)
		}
		if err := change(obj); err != nil {
			return sqlstore.Object{}, err
		}
		stored, err := r.write(ctx, req, objectWrite(sqlstore.OpUpdate, req.key(), current.Revision, req.res, obj))
		if errors.Is(err, sqlstore.ErrConflict) {
			continue
		}
		if err != nil {
			return sqlstore.Object{}, storedobj.StorageError(err, req.gr, req.name)
		}
		return stored, nil
	}
}
