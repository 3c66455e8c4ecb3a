package sqlstore

import (
	"sort"
	"sync"
)

// Default bounds of the hub's window of recent events. A watch that starts inside the window
// replays from memory; an older one replays from the log. The bytes bound counts each version's
// value once; the heap may hold up to twice that, as an update in the window keeps alive the
// evicted version it replaced (its Prev), plus what writes attached to the versions and what
// watchers memoized of the events (Object.Attached, Event.MemoKeyed), not counted.
const (
	defaultWindowEvents = 10000
	defaultWindowBytes  = 32 << 20
)

// hub holds the window of recent events and the attached watchers, and fans each published
// event out to the watchers of its resource. The feed is its only publisher.
//
// Invariant: the window holds every event with a revision in (windowStart, passed], in order,
// and every attached watcher has been offered every event up to passed.
type hub struct {
	mu sync.Mutex

	passed      int64
	windowStart int64
	window      []windowEntry // window[head:] is live; the prefix awaits reuse
	head        int
	windowBytes int
	maxEvents   int
	maxBytes    int

	watchers map[*Watcher]struct{} // every watcher not yet ended, attached or catching up
	byKind   map[string]*resourceWatchers
	closed   error // set once the feed has stopped; no new watchers after it
}

type windowEntry struct {
	ev    *Event
	bytes int // what the event adds to windowBytes
}

// resourceWatchers keeps the attached watchers of one resource by what they select, so that
// fan-out looks only at the watchers an event can match.
type resourceWatchers struct {
	bySlot map[watcherSlot]map[*Watcher]struct{}
	// indexes counts the watchers of each Index, whose keys fan-out asks of every event.
	indexes map[*Index]int
}

// watcherSlot is what a watcher selects: a namespace ("" for all) and, with an Index, a key.
type watcherSlot struct {
	namespace string
	index     *Index
	key       string
}

func (w *Watcher) slot() watcherSlot {
	return watcherSlot{namespace: w.opts.Namespace, index: w.opts.Index, key: w.opts.Key}
}

func newHub() *hub {
	return &hub{
		maxEvents: defaultWindowEvents,
		maxBytes:  defaultWindowBytes,
		watchers:  map[*Watcher]struct{}{},
		byKind:    map[string]*resourceWatchers{},
	}
}

// start positions an empty window at revision, where the feed begins reading.
func (h *hub) start(revision int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.passed, h.windowStart = revision, revision
}

func (h *hub) windowEvents() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return int64(h.maxEvents)
}

// size is how many events and bytes the window holds, and how many watchers there are.
func (h *hub) size() (events, bytes, watchers int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.window) - h.head, h.windowBytes, len(h.watchers)
}

// setWindowLimits changes the window's bounds (tests use small windows).
func (h *hub) setWindowLimits(events, bytes int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.maxEvents, h.maxBytes = events, bytes
	h.evictLocked()
}

// publish appends events, in revision order, to the window, offers each to the watchers it
// matches, and records that the feed has passed through (at least the last event's revision).
func (h *hub) publish(events []*Event, through int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range events {
		size := len(ev.Object.Value)
		if ev.Prev != nil {
			if prev := h.windowObjectLocked(ev.Prev.Revision); prev != nil {
				ev.Prev = prev // the window keeps one copy of each version instead of two
			} else {
				size += len(ev.Prev.Value)
			}
		}
		h.appendLocked(ev, size)
	}
	h.passed = max(h.passed, through)
	h.evictLocked()
}

// publishLocal publishes the prefix of events (which follow each other and what the hub has
// passed) whose previous states the window holds, taking those states from it, and returns its
// length. The events come from the committer, which knows only the revision of each previous
// state.
func (h *hub) publishLocal(events []*Event) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, ev := range events {
		if ev.Prev != nil {
			prev := h.windowObjectLocked(ev.Prev.Revision)
			if prev == nil {
				break
			}
			ev.Prev = prev
		}
		h.appendLocked(ev, len(ev.Object.Value))
		h.passed = ev.Revision
		n++
	}
	h.evictLocked()
	return n
}

// appendLocked adds ev, which adds size bytes, to the window and offers it to the watchers it
// matches.
func (h *hub) appendLocked(ev *Event, size int) {
	h.window = append(h.window, windowEntry{ev, size})
	h.windowBytes += size
	h.fanOutLocked(ev)
}

// windowObjectLocked is a copy of the object the window's event at revision wrote, sharing its
// value; nil when the window holds no event at revision. A copy, not a pointer into the event:
// that would keep the event alive after its eviction, and through its own Prev the version
// before it, and so on through every version of an object that is updated without pause.
func (h *hub) windowObjectLocked(revision int64) *Object {
	live := h.window[h.head:]
	i := sort.Search(len(live), func(i int) bool { return live[i].ev.Revision >= revision })
	if i < len(live) && live[i].ev.Revision == revision {
		obj := live[i].ev.Object
		return &obj
	}
	return nil
}

func (h *hub) evictLocked() {
	for h.head < len(h.window) && (len(h.window)-h.head > h.maxEvents || h.windowBytes > h.maxBytes) {
		oldest := h.window[h.head]
		h.window[h.head] = windowEntry{}
		h.head++
		h.windowBytes -= oldest.bytes
		h.windowStart = oldest.ev.Revision
	}
	// Reuse the evicted prefix once it is half the slice, so the window's memory stays bounded.
	if h.head > 0 && h.head >= len(h.window)/2 {
		n := copy(h.window, h.window[h.head:])
		clear(h.window[n:])
		h.window, h.head = h.window[:n], 0
	}
}

// fanOutLocked offers ev to the watchers of its resource that select its namespace (or all) and,
// those with an Index, one of the keys it is filed under.
func (h *hub) fanOutLocked(ev *Event) {
	rw := h.byKind[ev.Object.Resource]
	if rw == nil {
		return
	}
	h.offerSlotLocked(rw, watcherSlot{}, ev)
	for idx := range rw.indexes {
		if ev.Err != nil { // filed under every key
			h.offerIndexLocked(rw, idx, ev)
			continue
		}
		for _, key := range ev.keysIn(idx) {
			h.offerSlotLocked(rw, watcherSlot{index: idx, key: key}, ev)
		}
	}
}

// offerSlotLocked offers ev to the watchers of slot, across namespaces and in ev's.
func (h *hub) offerSlotLocked(rw *resourceWatchers, slot watcherSlot, ev *Event) {
	for w := range rw.bySlot[slot] {
		h.offerLocked(w, ev)
	}
	if slot.namespace = ev.Object.Namespace; slot.namespace != "" {
		for w := range rw.bySlot[slot] {
			h.offerLocked(w, ev)
		}
	}
}

// offerIndexLocked offers ev to every watcher of idx whose namespace it is in.
func (h *hub) offerIndexLocked(rw *resourceWatchers, idx *Index, ev *Event) {
	for slot, set := range rw.bySlot {
		if slot.index == idx && (slot.namespace == "" || slot.namespace == ev.Object.Namespace) {
			for w := range set {
				h.offerLocked(w, ev)
			}
		}
	}
}

// offerLocked queues ev for an attached watcher unless the watcher starts after it.
func (h *hub) offerLocked(w *Watcher, ev *Event) {
	if ev.Revision > w.after {
		h.sendLocked(w, ev)
	}
}

// sendLocked queues ev for an attached watcher without blocking. It goes straight into the
// watcher's channel when that has room and nothing is waiting before it; otherwise into the
// overflow, which a pump goroutine feeds into the channel at the consumer's pace. A watcher whose
// queue already holds its whole buffer has fallen behind and is ended, so that it never holds up
// the feed or the other watchers, and never misses an event silently.
func (h *hub) sendLocked(w *Watcher, ev *Event) {
	if !w.pumping {
		select {
		case w.events <- ev:
			return
		default:
		}
	}
	if len(w.events)+len(w.overflow)+w.pumped >= w.buffer {
		h.endLocked(w, ErrWatcherTooSlow)
		return
	}
	w.overflow = append(w.overflow, ev)
	if !w.pumping {
		w.pumping = true
		go w.pump()
	}
}

// windowFrom returns up to limit events of w's selection after revision, scanning at most
// scanLimit window entries, and the revision the scan reached: every event of the selection up
// to that revision is in the returned slice. ok is false when the window no longer reaches back
// to revision.
func (h *hub) windowFrom(w *Watcher, revision int64, limit, scanLimit int) (events []*Event, reached int64, ok bool) {
	if revision < h.windowStart {
		return nil, 0, false
	}
	live := h.window[h.head:]
	i := sort.Search(len(live), func(i int) bool { return live[i].ev.Revision > revision })
	reached = h.passed
	for scanned := 0; i < len(live); i, scanned = i+1, scanned+1 {
		if len(events) == limit || scanned == scanLimit {
			reached = live[i-1].ev.Revision
			break
		}
		if w.matches(live[i].ev) {
			events = append(events, live[i].ev)
		}
	}
	return events, reached, true
}

// attachLocked makes w a live watcher: from now on publish offers it every matching event after
// its start.
func (h *hub) attachLocked(w *Watcher, after int64) {
	w.after, w.attached = after, true
	rw := h.byKind[w.opts.Resource]
	if rw == nil {
		rw = &resourceWatchers{bySlot: map[watcherSlot]map[*Watcher]struct{}{}, indexes: map[*Index]int{}}
		h.byKind[w.opts.Resource] = rw
	}
	slot := w.slot()
	set := rw.bySlot[slot]
	if set == nil {
		set = map[*Watcher]struct{}{}
		rw.bySlot[slot] = set
	}
	set[w] = struct{}{}
	if slot.index != nil {
		rw.indexes[slot.index]++
	}
	if w.progressPending {
		w.progressPending = false
		h.sendProgressLocked(w)
	}
}

func (h *hub) detachLocked(w *Watcher) {
	rw := h.byKind[w.opts.Resource]
	slot := w.slot()
	delete(rw.bySlot[slot], w)
	if len(rw.bySlot[slot]) == 0 {
		delete(rw.bySlot, slot)
	}
	if slot.index != nil {
		if rw.indexes[slot.index]--; rw.indexes[slot.index] == 0 {
			delete(rw.indexes, slot.index)
		}
	}
	if len(rw.bySlot) == 0 {
		delete(h.byKind, w.opts.Resource)
	}
	w.attached = false
}

// sendProgressLocked queues a progress event for an attached watcher: everything up to passed
// has already been queued for it, and nothing exists between its start and passed when it
// started ahead of the feed.
func (h *hub) sendProgressLocked(w *Watcher) {
	h.sendLocked(w, &Event{Progress: true, Revision: max(h.passed, w.after)})
}

// endLocked ends w with err (nil for a normal close) unless it has already ended. The channel is
// closed here unless a goroutine may still send on it (the catch-up or the pump): that one
// closes it when it sees the cancellation.
func (h *hub) endLocked(w *Watcher, err error) {
	if _, live := h.watchers[w]; !live {
		return
	}
	delete(h.watchers, w)
	w.err = err
	w.cancel()
	w.overflow = nil
	if w.attached {
		h.detachLocked(w)
		if !w.pumping {
			w.closeEventsLocked()
		}
	}
}

// restart ends every watcher with err and empties the window, which starts again at revision.
func (h *hub) restart(revision int64, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.endAllLocked(err)
	clear(h.window)
	h.window, h.head, h.windowBytes = h.window[:0], 0, 0
	h.passed, h.windowStart = revision, revision
}

func (h *hub) endAllLocked(err error) {
	for w := range h.watchers {
		h.endLocked(w, err)
	}
}

// shutdown ends every watcher with err and refuses new ones.
func (h *hub) shutdown(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = err
	h.endAllLocked(err)
}
