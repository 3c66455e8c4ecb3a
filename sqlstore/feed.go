package sqlstore

import "context"

// feed tails the revision log in order and fans events out to watchers.
// (Owned by the change-feed work; this is the seam the write path uses.)
type feed struct{}

func newFeed(s *Store) *feed { return &feed{} }

// run tails the log until ctx ends.
func (f *feed) run(ctx context.Context) {}

// wake tells the feed that a revision up to rev has been committed (by this process or, via
// NOTIFY, another replica), so it reads the log now instead of at its next poll.
func (f *feed) wake(rev int64) {}
