package sqlstore

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sqlkube/sqlkube/dialects"
	"github.com/sqlkube/sqlkube/dialects/postgres"
)

const (
	// defaultWatchBuffer bounds a watcher's queue when Options.WatchBuffer is 0.
	defaultWatchBuffer = 1000
	// feedPage is how many log rows the tailer reads per query.
	feedPage = 1000
	// maxLocal bounds the events the committer hands the feed ahead of its publishing them;
	// beyond it they are dropped, and the feed reads them from the log instead.
	maxLocal = 4 * feedPage
	// fastPoll is how often the tailer reads the log when no notification can be relied on
	// (the listener is down or not yet confirmed) or after a failed read; slowPoll is the
	// fallback while notifications arrive.
	fastPoll = 100 * time.Millisecond
	slowPoll = 1500 * time.Millisecond
	// Reconnection delays of the PostgreSQL listener.
	listenBackoffMin = 50 * time.Millisecond
	listenBackoffMax = 5 * time.Second
)

// changeLog is the feed's view of the revision log.
type changeLog interface {
	// bounds reads the current and compacted revisions.
	bounds(ctx context.Context) (current, compacted int64, err error)
	// read returns, in revision order, up to limit events with revisions in (after, through];
	// of one resource (and namespace, if set) when resource is set, of all otherwise.
	read(ctx context.Context, resource, namespace string, after, through int64, limit int) ([]*Event, error)
}

// listenFunc calls notify with the payload of each notification from other writers until ctx
// ends or its connection fails.
type listenFunc func(ctx context.Context, notify func(payload string)) error

// feed tails the revision log in order and fans events out to watchers through its hub.
//
// One goroutine reads `revision > last` up to the current revision; invariant 2 (revisions
// become visible in order, without gaps) makes that read miss and reorder nothing. It reads when
// woken by a notification from another replica or by a poll. This process's own commits need no
// read: the committer hands their events over (handOff), and the feed publishes them as they
// are when they directly follow what it has published, reading from the log only the revisions
// other replicas committed in between.
type feed struct {
	log    changeLog
	listen listenFunc // nil when no other process writes (SQLite)
	logger *slog.Logger
	buffer int
	hub    *hub

	wakeC     chan struct{}
	last      atomic.Int64 // newest revision published to the hub
	committed atomic.Int64 // newest revision a wake-up reported committed
	listening atomic.Bool  // a notification arrived since the listener last (re)connected
	localMu   sync.Mutex
	local     []*Event  // committed here and not yet taken by the feed, in revision order
	localAt   time.Time // when the oldest of local was handed over
	// committing counts this process's batches being committed. While one is, the feed leaves
	// the log's newest revisions unread: a notification of the batch's own commit may arrive
	// before its hand-off, and its events read from the log would lack what its writes attached.
	// The batch's end wakes the feed if it left a revision unread.
	committing atomic.Int32
	observer   Observer
	started    chan struct{}
	stopped    chan struct{}
}

func newFeed(s *Store) *feed {
	var listen listenFunc
	if s.db.Name == dialects.Postgres {
		listen = func(ctx context.Context, notify func(string)) error {
			return postgres.Listen(ctx, s.database.address, dialects.NotifyChannel, notify)
		}
	}
	f := newFeedOn(newSQLLog(s.db, s.dbError, s.fromStorage), listen, s.logger(), s.opts.WatchBuffer)
	f.observer = s.opts.Observer
	return f
}

// newFeedOn makes a feed that observes nothing (newFeed sets the store's Observer).

func newFeedOn(log changeLog, listen listenFunc, logger *slog.Logger, buffer int) *feed {
	if buffer <= 0 {
		buffer = defaultWatchBuffer
	}
	return &feed{
		log:      log,
		listen:   listen,
		logger:   logger,
		buffer:   buffer,
		hub:      newHub(),
		observer: nopObserver{},
		wakeC:    make(chan struct{}, 1),
		started:  make(chan struct{}),
		stopped:  make(chan struct{}),
	}
}

// run tails the log until ctx ends, then ends every watcher with ErrClosed and returns once the
// listener has stopped too.
func (f *feed) run(ctx context.Context) {
	defer close(f.stopped)
	defer f.hub.shutdown(ErrClosed)
	if !f.begin(ctx) {
		return
	}
	if f.listen != nil {
		listenerDone := make(chan struct{})
		go func() {
			defer close(listenerDone)
			f.listenLoop(ctx)
		}()
		defer func() { <-listenerDone }()
	}
	failed := false
	for {
		delay := f.pollInterval()
		err := f.tail(ctx, failed)
		if failed = err != nil; failed {
			if ctx.Err() != nil {
				return
			}
			f.logger.Warn("change feed: reading the revision log failed; retrying", "err", err)
			delay = fastPoll
		}
		if !f.sleep(ctx, delay) {
			return
		}
	}
}

// begin positions the feed a window's worth of events before the current revision, so that the
// first tail fills the window: after a restart, clients resume their watches from revisions they
// saw before it, and most of them are served from memory rather than by one log replay each.
// It retries until the database answers or ctx ends.
func (f *feed) begin(ctx context.Context) bool {
	for {
		current, compacted, err := f.log.bounds(ctx)
		if err == nil {
			start := max(compacted, current-f.hub.windowEvents())
			f.hub.start(start)
			f.last.Store(start)
			close(f.started)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		f.logger.Warn("change feed: reading the current revision failed; retrying", "err", err)
		if !f.sleep(ctx, fastPoll) {
			return false
		}
	}
}

// awaitStart waits until the feed has its starting revision, so that a new watcher knows which
// events the hub will publish.
func (f *feed) awaitStart(ctx context.Context) error {
	select {
	case <-f.started:
		return nil
	case <-f.stopped:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sleep waits for a wake-up or delay; false when ctx has ended.
func (f *feed) sleep(ctx context.Context, delay time.Duration) bool {
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-f.wakeC:
	case <-timer.C:
		f.observer.Woken("poll")
	}
	return true
}

func (f *feed) pollInterval() time.Duration {
	if f.listen != nil && !f.listening.Load() {
		return fastPoll
	}
	return slowPoll
}

// tail publishes every event up to the newest committed revision it knows of: every revision at
// or below a committed one has committed (invariant 2), so the read neither misses nor
// reorders anything. A wake-up with a revision saves asking the database for the current one;
// after a failure (checkBounds), the database is asked in any case, as history may have been
// compacted while the feed could not read.
func (f *feed) tail(ctx context.Context, checkBounds bool) error {
	current := f.committed.Load()
	if checkBounds || current <= f.last.Load() {
		dbCurrent, compacted, err := f.log.bounds(ctx)
		if err != nil {
			return err
		}
		if last := f.last.Load(); compacted > last {
			f.skipCompacted(last, compacted)
		}
		current = max(current, dbCurrent)
	}
	if err := f.publishLocal(ctx); err != nil {
		return err
	}
	if f.committing.Load() > 0 {
		// Read once the batch in flight is handed off (see committing): endCommit wakes the
		// feed for what it knows committed meanwhile.
		raiseTo(&f.committed, current)
		return nil
	}
	return f.readThrough(ctx, current)
}

// readThrough publishes the log's events up to revision, every one of which has committed.
func (f *feed) readThrough(ctx context.Context, revision int64) error {
	for last := f.last.Load(); last < revision; last = f.last.Load() {
		events, err := f.log.read(ctx, "", "", last, revision, feedPage)
		if err != nil {
			return err
		}
		through := revision
		if len(events) == feedPage {
			through = events[len(events)-1].Revision
		}
		f.hub.publish(events, through)
		f.last.Store(through)
		f.observer.CaughtUp(len(events))
	}
	return nil
}

// publishLocal publishes the events this process committed. Those the log reads have already
// published are skipped; before one that does not directly follow the last published revision,
// the revisions in between (another replica's) are read from the log: they have all committed,
// since a batch's revisions are taken under the counter row's lock, after every earlier batch
// committed. An event whose previous state the window does not hold is read from the log too.
func (f *feed) publishLocal(ctx context.Context) error {
	events, handedAt := f.takeLocal()
	for len(events) > 0 {
		last := f.last.Load()
		switch first := events[0].Revision; {
		case first <= last:
			events = events[1:]
		case first > last+1:
			if err := f.readThrough(ctx, first-1); err != nil {
				return err
			}
		default:
			n := f.hub.publishLocal(events[:contiguous(events)])
			if n == 0 {
				if err := f.readThrough(ctx, first); err != nil {
					return err
				}
				continue
			}
			f.last.Store(events[n-1].Revision)
			f.observer.Published(n, time.Since(handedAt))
			events = events[n:]
		}
	}
	return nil
}

// contiguous is the length of the prefix of events whose revisions follow each other.
func contiguous(events []*Event) int {
	n := 1
	for n < len(events) && events[n].Revision == events[n-1].Revision+1 {
		n++
	}
	return n
}

// handOff hands the feed the events of a batch this process has just committed (results[i]
// answers batch[i]) and wakes it. An event's previous state is left for the hub to find in its
// window: the committer knows only its revision. The events share their values with the
// results: the bytes a write's Render returned must stay unchanged once written.
func (f *feed) handOff(batch []*pendingWrite, results []writeResult, current int64) {
	f.localMu.Lock()
	if len(f.local)+len(results) > maxLocal {
		f.local = nil // the feed is far behind: it reads them from the log
	}
	if len(f.local) == 0 {
		f.localAt = time.Now()
	}
	for i, r := range results {
		if r.err == nil {
			f.local = append(f.local, localEvent(batch[i].write, r.obj))
		}
	}
	f.localMu.Unlock()
	f.wake(current)
}

// beginCommit is called before a batch of this process is committed, and endCommit once it has
// been handed off or has failed: the feed then reads what it left in the log meanwhile (see the
// committing field).
func (f *feed) beginCommit() { f.committing.Add(1) }

func (f *feed) endCommit() {
	f.committing.Add(-1)
	// Only for a revision left unread: a wake-up with nothing left would ask the database for
	// its bounds after every batch.
	f.wake(f.committed.Load())
}

// localEvent is the event of a committed write, as the log would give it but for the previous
// state's value, and with what the write attached.
func localEvent(w Write, obj Object) *Event {
	ev := &Event{Op: w.Op, Revision: obj.Revision, Object: obj}
	ev.Object.Attached = w.Attached
	if w.Op != OpCreate {
		ev.Prev = &Object{Key: obj.Key, Revision: w.ExpectedRevision}
	}
	return ev
}

// takeLocal takes the events handed over, and when the oldest of them was.
func (f *feed) takeLocal() ([]*Event, time.Time) {
	f.localMu.Lock()
	defer f.localMu.Unlock()
	events := f.local
	f.local = nil
	return events, f.localAt
}

// skipCompacted restarts the feed after compacted when compaction has removed history it had
// not read yet: the events in (last, compacted] may be gone, so every watcher ends with a
// CompactedError (its client relists, as after a 410) rather than miss them.
func (f *feed) skipCompacted(last, compacted int64) {
	f.logger.Warn("change feed: history was compacted before the feed read it; ending all watchers",
		"feed_revision", last, "compacted", compacted)
	f.hub.restart(compacted, &CompactedError{Requested: last, Compacted: compacted})
	f.last.Store(compacted)
}

// wake tells the feed that a revision up to rev has been committed (by this process or, via
// NOTIFY, another replica), so it reads the log now instead of at its next poll.
func (f *feed) wake(rev int64) {
	raiseTo(&f.committed, rev)
	if rev > 0 && rev <= f.last.Load() {
		return // already published
	}
	select {
	case f.wakeC <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// listenLoop keeps a notification listener connected, reconnecting with exponential backoff.
// The feed polls fast until a notification proves the listener is live, since a listener that
// has not yet issued LISTEN, or whose connection died unnoticed, would miss notifications.
func (f *feed) listenLoop(ctx context.Context) {
	backoff := listenBackoffMin
	for {
		connected := time.Now()
		err := f.listen(ctx, f.notified)
		f.listening.Store(false)
		f.wake(0) // notifications may have been lost while the connection was failing
		if ctx.Err() != nil {
			return
		}
		if time.Since(connected) > listenBackoffMax {
			backoff = listenBackoffMin // that connection was healthy for a while
		}
		f.logger.Warn("change feed: notification listener stopped; reconnecting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, listenBackoffMax)
	}
}

func (f *feed) notified(payload string) {
	f.listening.Store(true)
	f.observer.Woken("notify")
	rev, err := strconv.ParseInt(payload, 10, 64)
	if err != nil {
		rev = 0 // not a revision: read anyway
	}
	f.wake(rev)
}

// raiseTo sets v to n if n is greater.
func raiseTo(v *atomic.Int64, n int64) {
	for old := v.Load(); n > old && !v.CompareAndSwap(old, n); old = v.Load() {
	}
}
