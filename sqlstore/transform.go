package sqlstore

import (
	"bytes"
	"context"
)

// Transformer turns values into the form the database keeps and back (encryption at rest), for
// the resources it covers. The store calls ToStorage on every value written of those resources,
// and FromStorage on every value read of any resource, so that everything above the store, and
// the change feed's window, sees values as written (and a value of a resource not covered that
// the database keeps transformed is refused, not taken for what was written); Mark sees them
// too. The database cannot look into transformed values: a list of such a resource with
// ValueContains evaluates it in the process, after FromStorage.
type Transformer interface {
	// Transforms reports whether the values of resource (a storage name) are transformed.
	Transforms(resource string) bool
	// ToStorage gives what the database keeps for value, the value of key.
	ToStorage(ctx context.Context, key Key, value []byte) ([]byte, error)
	// FromStorage gives back the value the database keeps as stored for key, and whether stored
	// is stale: not what ToStorage would give now. The store reports its error as an
	// *UnreadableError.
	FromStorage(ctx context.Context, key Key, stored []byte) (value []byte, stale bool, err error)
}

// transforms reports whether the store's Transformer covers resource.
func (s *Store) transforms(resource string) bool {
	return s.opts.Transformer != nil && s.opts.Transformer.Transforms(resource)
}

// toStorage is what the database keeps for key's value.
func (s *Store) toStorage(ctx context.Context, key Key, value []byte) ([]byte, error) {
	if !s.transforms(key.Resource) {
		return value, nil
	}
	return s.opts.Transformer.ToStorage(ctx, key, value)
}

// fromStorage is the value of key that the database keeps as stored.
func (s *Store) fromStorage(ctx context.Context, key Key, stored []byte) ([]byte, error) {
	value, _, err := s.fromStorageStale(ctx, key, stored)
	return value, err
}

// fromStorageStale is fromStorage, telling whether stored is stale.
func (s *Store) fromStorageStale(ctx context.Context, key Key, stored []byte) ([]byte, bool, error) {
	if s.opts.Transformer == nil || stored == nil {
		return stored, false, nil
	}
	value, stale, err := s.opts.Transformer.FromStorage(ctx, key, stored)
	if err != nil {
		return nil, false, &UnreadableError{Key: key, Err: err}
	}
	return value, stale, nil
}

// inProcessValueContains moves a list's ValueContains into its Filter when the resource's values
// are transformed: the database cannot see into them.
func (s *Store) inProcessValueContains(opts ListOptions) ListOptions {
	if len(opts.ValueContains) == 0 || !s.transforms(opts.Resource) {
		return opts
	}
	parts, filter := opts.ValueContains, opts.Filter
	opts.ValueContains = nil
	opts.Filter = func(o Object) bool {
		for _, part := range parts {
			if bytes.Contains(o.Value, part) {
				return filter == nil || filter(o)
			}
		}
		return false
	}
	return opts
}
