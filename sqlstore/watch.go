package sqlstore

import "context"

// Watch starts a watcher. It replays retained history after opts.After, from memory when recent
// and from the log otherwise, then follows the change feed.
func (s *Store) Watch(ctx context.Context, opts WatchOptions) (*Watcher, error) { panic("TODO") }

// Watcher receives events for one watch.
type Watcher struct{}

// Events delivers events in revision order. It is closed when the watch ends; Err then says why.
func (w *Watcher) Events() <-chan *Event { panic("TODO") }

// Err is nil after Close or context cancellation, ErrWatcherTooSlow when the consumer fell behind,
// or the error that ended the feed.
func (w *Watcher) Err() error { panic("TODO") }

// RequestProgress asks for a Progress event, delivered in order after the events already queued,
// carrying the newest revision the feed has passed.
func (w *Watcher) RequestProgress() { panic("TODO") }

// Close ends the watch and frees its buffer.
func (w *Watcher) Close() { panic("TODO") }
