package sqlstore

import (
	"context"
	"errors"
	"slices"
)

// How much a catching-up watcher takes per step: events per log page or window chunk, and window
// entries scanned while holding the hub's lock.
const (
	replayPage = 500
	replayScan = 4096
)

// channelBuffer caps a watcher's channel; the rest of its buffer is an overflow slice that
// grows only when the consumer lags, so an idle watcher holds little memory.
const channelBuffer = 16

// Watch starts a watcher. It replays retained history after opts.After, from memory when recent
// and from the log otherwise, then follows the change feed.
func (s *Store) Watch(ctx context.Context, opts WatchOptions) (*Watcher, error) {
	return s.feed.watch(ctx, opts)
}

// Watcher receives events for one watch.
//
// A watcher starts catching up: a goroutine of its own replays the window or the log into its
// channel, at the consumer's pace. Once it has reached the feed it attaches to the hub, and from
// then on the feed queues events without blocking, ending the watcher if its buffer is full. An
// attached watcher has a goroutine only while its consumer lags (the pump).
type Watcher struct {
	hub    *hub
	opts   WatchOptions
	buffer int
	events chan *Event
	// ctx ends when the watch ends, for any reason; it stops a replay or pump in progress.
	ctx    context.Context
	cancel context.CancelFunc

	// Guarded by hub.mu.
	after           int64 // attached: the revision events must be newer than
	attached        bool
	eventsClosed    bool
	progressPending bool     // asked for while catching up
	overflow        []*Event // attached: queued behind the channel, in order
	pumping         bool     // the pump is running: it alone sends on the channel
	pumped          int      // events the pump took from overflow and may not have sent yet
	err             error
}

// Events delivers events in revision order. It is closed when the watch ends; Err then says why.
func (w *Watcher) Events() <-chan *Event { return w.events }

// Err is nil after Close or context cancellation, ErrWatcherTooSlow when the consumer fell behind,
// or the error that ended the feed.
func (w *Watcher) Err() error {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	return w.err
}

// RequestProgress asks for a Progress event, delivered in order after the events already queued,
// carrying the newest revision the feed has passed (while the watcher still replays history, the
// revision it has replayed through: a Progress event never claims more than was delivered).
func (w *Watcher) RequestProgress() {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	if _, live := w.hub.watchers[w]; !live {
		return
	}
	if w.attached {
		w.hub.sendProgressLocked(w)
	} else {
		w.progressPending = true
	}
}

// Close ends the watch and frees its buffer.
func (w *Watcher) Close() {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	w.hub.endLocked(w, nil)
}

func (w *Watcher) matches(ev *Event) bool {
	return ev.Object.Resource == w.opts.Resource &&
		(w.opts.Namespace == "" || ev.Object.Namespace == w.opts.Namespace) &&
		(w.opts.Index == nil || ev.filedUnder(w.opts.Index, w.opts.Key))
}

func (w *Watcher) closeEventsLocked() {
	if !w.eventsClosed {
		close(w.events)
		w.eventsClosed = true
	}
}

// watch checks opts.After against the log's bounds and starts a watcher: attached at once when
// the feed has not yet passed its start, catching up otherwise.
//
// A watch after R needs every event newer than R. Compaction at C keeps every event newer than C,
// so R = C is served and only R < C is a CompactedError (as etcd refuses a watch starting at
// revision R+1 <= C). R above the current revision is a FutureRevisionError; R between the feed's
// position and the current revision is fine: the feed is about to publish those events.
func (f *feed) watch(ctx context.Context, opts WatchOptions) (*Watcher, error) {
	if opts.Resource == "" {
		return nil, errors.New("sqlstore: a watch needs a resource")
	}
	if opts.Key != "" && opts.Index == nil {
		return nil, errors.New("sqlstore: a watch's key needs an index")
	}
	if err := f.awaitStart(ctx); err != nil {
		return nil, err
	}
	current, compacted, err := f.log.bounds(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case opts.After < compacted:
		return nil, &CompactedError{Requested: opts.After, Compacted: compacted}
	case opts.After > current:
		return nil, &FutureRevisionError{Requested: opts.After, Current: current}
	}

	w := &Watcher{hub: f.hub, opts: opts, buffer: f.buffer, events: make(chan *Event, min(f.buffer, channelBuffer))}
	w.ctx, w.cancel = context.WithCancel(ctx)
	h := f.hub
	h.mu.Lock()
	if h.closed != nil {
		h.mu.Unlock()
		w.cancel()
		return nil, h.closed
	}
	h.watchers[w] = struct{}{}
	caughtUp := opts.After >= h.passed
	if caughtUp {
		h.attachLocked(w, opts.After)
	}
	h.mu.Unlock()

	context.AfterFunc(w.ctx, w.Close)
	if !caughtUp {
		go w.catchUp(f.log, opts.After)
	}
	return w, nil
}

// catchUp replays everything after pos, then attaches to the hub, or ends the watcher with the
// error that stopped the replay.
func (w *Watcher) catchUp(log changeLog, pos int64) {
	err := w.replay(log, pos)
	h := w.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.attached {
		return
	}
	if w.ctx.Err() != nil {
		err = nil // ended by Close, cancellation or shutdown, which records the reason
	}
	h.endLocked(w, err)
	w.closeEventsLocked()
}

func (w *Watcher) replay(log changeLog, pos int64) error {
	for {
		events, reached, attached, err := w.nextChunk(log, pos)
		if err != nil || attached {
			return err
		}
		for _, ev := range events {
			if err := w.send(ev); err != nil {
				return err
			}
		}
		pos = reached
		if w.takeProgressRequest() {
			if err := w.send(&Event{Progress: true, Revision: pos}); err != nil {
				return err
			}
		}
	}
}

// nextChunk returns the next events after pos, from the window when it still reaches back to
// pos and from the log otherwise, with the revision they cover up to; or attaches w when pos has
// reached the feed.
func (w *Watcher) nextChunk(log changeLog, pos int64) (events []*Event, reached int64, attached bool, err error) {
	h := w.hub
	h.mu.Lock()
	if err := w.ctx.Err(); err != nil {
		h.mu.Unlock()
		return nil, 0, false, err
	}
	if pos >= h.passed {
		h.attachLocked(w, pos)
		h.mu.Unlock()
		return nil, 0, true, nil
	}
	events, reached, inWindow := h.windowFrom(w, pos, replayPage, replayScan)
	windowStart := h.windowStart
	h.mu.Unlock()
	if inWindow {
		return events, reached, false, nil
	}
	events, reached, err = w.readLog(log, pos, windowStart)
	return events, reached, false, err
}

// readLog reads the next page of w's events in (pos, through] from the log: those of its
// resource and namespace the log gives, filed under its key if it has an Index.
func (w *Watcher) readLog(log changeLog, pos, through int64) ([]*Event, int64, error) {
	events, err := log.read(w.ctx, w.opts.Resource, w.opts.Namespace, pos, through, replayPage)
	if err != nil {
		return nil, 0, err
	}
	// Compaction only removes rows at or below the compacted revision; if that is still at or
	// below pos after the read, the page is complete.
	_, compacted, err := log.bounds(w.ctx)
	if err != nil {
		return nil, 0, err
	}
	if compacted > pos {
		return nil, 0, &CompactedError{Requested: pos, Compacted: compacted}
	}
	reached := through
	if len(events) == replayPage {
		reached = events[len(events)-1].Revision
	}
	if w.opts.Index != nil {
		events = slices.DeleteFunc(events, func(ev *Event) bool { return !w.matches(ev) })
	}
	return events, reached, nil
}

func (w *Watcher) send(ev *Event) error {
	select {
	case w.events <- ev:
		return nil
	case <-w.ctx.Done():
		return w.ctx.Err()
	}
}

func (w *Watcher) takeProgressRequest() bool {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	asked := w.progressPending
	w.progressPending = false
	return asked
}

// pump feeds the overflow into the channel, blocking on the consumer, until the overflow is empty
// or the watch ends; it closes the channel if the watch ended while it was the sender.
func (w *Watcher) pump() {
	h := w.hub
	for {
		h.mu.Lock()
		if w.ctx.Err() != nil {
			h.endLocked(w, nil) // when the consumer's context ended first; a no-op otherwise
			w.pumping = false
			w.closeEventsLocked()
			h.mu.Unlock()
			return
		}
		if len(w.overflow) == 0 {
			w.pumping, w.pumped = false, 0
			h.mu.Unlock()
			return
		}
		batch := w.overflow
		w.overflow, w.pumped = nil, len(batch)
		h.mu.Unlock()
		for _, ev := range batch {
			if w.send(ev) != nil {
				break
			}
		}
	}
}
