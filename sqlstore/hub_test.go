package sqlstore

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"weak"
)

// publishAll publishes the whole of log to h, as the feed would.
func publishAll(t *testing.T, h *hub, log *memLog) []*Event {
	t.Helper()
	current, _, _ := log.bounds(context.Background())
	events, err := log.read(context.Background(), "", "", h.passed, current, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	h.publish(events, current)
	return events
}

func windowRevisions(h *hub) []int64 {
	var revs []int64
	for _, e := range h.window[h.head:] {
		revs = append(revs, e.ev.Revision)
	}
	return revs
}

func TestHubWindowKeepsNewestEventsWithinBounds(t *testing.T) {
	h := newHub()
	h.setWindowLimits(3, 1<<20)
	log := &memLog{}
	for i := range 50 {
		log.append(OpCreate, Key{"configmaps", "ns", fmt.Sprintf("k%02d", i)})
		publishAll(t, h, log)
	}
	if got := windowRevisions(h); len(got) != 3 || got[0] != 48 || h.windowStart != 47 || h.passed != 50 {
		t.Fatalf("window %v after %d, passed %d; want [48 49 50] after 47, passed 50", got, h.windowStart, h.passed)
	}
	if cap(h.window) > 8 {
		t.Fatalf("window slice grew to %d entries for 3 events: evicted entries are not reused", cap(h.window))
	}

	size := len(testValue(Key{Name: "k49"}, 50))
	h.setWindowLimits(100, 2*size+1)
	if got := windowRevisions(h); len(got) != 2 || h.windowStart != 48 || h.windowBytes != 2*size {
		t.Fatalf("window %v after %d holding %d bytes; want 2 events after 48, %d bytes", got, h.windowStart, h.windowBytes, 2*size)
	}
}

// TestHubSharesPrevWithWindow: an update's Prev is the window's own copy of the version it
// replaced, counted once; a Prev older than the window is kept and counted.
func TestHubSharesPrevWithWindow(t *testing.T) {
	h := newHub()
	log := &memLog{}
	a := Key{"configmaps", "ns", "a"}
	log.append(OpCreate, a)
	log.append(OpUpdate, a)
	log.append(OpUpdate, a)
	events := publishAll(t, h, log)
	if !sharesValue(events[1].Prev, &events[0].Object) || !sharesValue(events[2].Prev, &events[1].Object) {
		t.Fatal("Prev of an update does not share its value with the window's event")
	}
	value := len(events[0].Object.Value)
	if h.windowBytes != 3*value {
		t.Fatalf("window holds %d bytes, want %d (each version once)", h.windowBytes, 3*value)
	}

	// A later window that starts after revision 3 keeps revision 4's Prev as its own copy.
	log.append(OpUpdate, a)
	log.append(OpUpdate, a)
	h.window, h.head, h.windowBytes, h.windowStart = nil, 0, 0, h.passed
	late := publishAll(t, h, log)
	if late[0].Prev == nil || late[0].Prev.Revision != 3 || !sharesValue(late[1].Prev, &late[0].Object) || h.windowBytes != 3*value {
		t.Fatalf("prev@%d, window bytes %d; want prev@3 kept, prev@4 shared, %d bytes", late[0].Prev.Revision, h.windowBytes, 3*value)
	}
}

// sharesValue reports whether prev is a copy of obj that shares its value's bytes, not a pointer
// into obj's event.
func sharesValue(prev, obj *Object) bool {
	return prev != obj && prev.Revision == obj.Revision && len(prev.Value) > 0 && &prev.Value[0] == &obj.Value[0]
}

// TestHubWindowReleasesEvictedEvents: an event evicted from the window is garbage once no watcher
// holds it, even though the next version's Prev shares its value. (A Prev pointing into the
// evicted event kept it alive, and its own Prev the event before it: every version of an object
// updated without pause stayed in memory.)
func TestHubWindowReleasesEvictedEvents(t *testing.T) {
	h := newHub()
	h.setWindowLimits(2, 1<<20)
	log := &memLog{}
	a := Key{"configmaps", "ns", "a"}
	log.append(OpCreate, a)
	first := weak.Make(publishAll(t, h, log)[0])
	for range 10 {
		log.append(OpUpdate, a)
		publishAll(t, h, log)
	}
	runtime.GC()
	if first.Value() != nil {
		t.Fatal("the first event, evicted nine updates ago, is still reachable")
	}
	runtime.KeepAlive(h) // the window, holding the last two events, is what is tested
}
