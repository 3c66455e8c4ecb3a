package follow

import (
	"context"

	"github.com/sqlkube/sqlkube/sqlstore"
)

// pageSize is how many objects Pages reads at a time.
const pageSize = 500

// Pages gives the objects of resource (in namespace, or all when empty) to each, a page at a
// time, each page read at the latest revision after the last key of the one before. Unlike one
// List, it holds neither a read snapshot nor the objects for as long as each takes on the whole
// (each may write, as the controllers deleting a namespace's or a CRD's objects do), at the
// price of no single snapshot: an object created meanwhile behind the pages read is missed,
// which a caller that loops until nothing is left does not mind.
func Pages(ctx context.Context, store Storage, resource, namespace string, each func(page []sqlstore.Object) error) error {
	var after sqlstore.Key
	for {
		var page []sqlstore.Object
		result, err := store.List(ctx, sqlstore.ListOptions{Resource: resource, Namespace: namespace, After: after, Limit: pageSize, Bulk: true}, func(o sqlstore.Object) error {
			page = append(page, o)
			return nil
		})
		if err != nil {
			return err
		}
		if len(page) > 0 {
			if err := each(page); err != nil {
				return err
			}
			after = page[len(page)-1].Key
		}
		if !result.More {
			return nil
		}
	}
}
