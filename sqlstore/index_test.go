package sqlstore

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// parityIndex files an event under the parity of its object's revision and of its previous
// state's: a key that an object's versions move between, as a pod's node or labels.
var parityIndex = NewIndex(func(ev *Event) []string {
	keys := []string{parity(ev.Object.Revision)}
	if ev.Prev != nil {
		keys = append(keys, parity(ev.Prev.Revision))
	}
	return keys
})

func parity(revision int64) string {
	if revision%2 == 0 {
		return "even"
	}
	return "odd"
}

func revisions(events []*Event) []int64 {
	out := make([]int64, len(events))
	for i, ev := range events {
		out[i] = ev.Revision
	}
	return out
}

func wantRevisions(t *testing.T, what string, got []*Event, want ...int64) {
	t.Helper()
	if !slices.Equal(revisions(got), want) {
		t.Fatalf("%s: got revisions %v, want %v", what, revisions(got), want)
	}
}

// An indexed watcher gets exactly the events filed under its key, in its namespace: those whose
// object or previous state has the key, so also the update and the delete that leave it; live,
// replayed from the window and replayed from the log alike. Watchers without an index get all.
func TestWatchIndexedGetsItsKeysEvents(t *testing.T) {
	forEachFeedBackend(t, func(t *testing.T, open func(testing.TB, int) *feedEnv) {
		env := open(t, 0)
		odd := env.watch(t, WatchOptions{Resource: "configmaps", Index: parityIndex, Key: "odd"})
		oddNS1 := env.watch(t, WatchOptions{Resource: "configmaps", Namespace: "ns1", Index: parityIndex, Key: "odd"})
		all := env.watch(t, WatchOptions{Resource: "configmaps"})
		a, b := Key{"configmaps", "ns1", "a"}, Key{"configmaps", "ns2", "b"}
		env.write(t, OpCreate, a)                             // 1: odd
		env.write(t, OpCreate, b)                             // 2: even
		env.write(t, OpUpdate, a)                             // 3: odd, was odd
		env.write(t, OpUpdate, b)                             // 4: even, was even
		env.write(t, OpCreate, Key{"configmaps", "ns2", "c"}) // 5: odd
		env.write(t, OpUpdate, a)                             // 6: even, was odd
		env.write(t, OpDelete, b)                             // 7: deleted at odd, was even
		env.write(t, OpCreate, Key{"configmaps", "ns1", "d"}) // 8: even
		env.write(t, OpCreate, Key{"configmaps", "ns1", "e"}) // 9: odd, the last event of all three
		wantRevisions(t, "odd", receive(t, odd, 6), 1, 3, 5, 6, 7, 9)
		wantRevisions(t, "odd in ns1", receive(t, oddNS1, 4), 1, 3, 6, 9)
		wantRevisions(t, "all", receive(t, all, 9), 1, 2, 3, 4, 5, 6, 7, 8, 9)

		fromWindow := env.watch(t, WatchOptions{Resource: "configmaps", Index: parityIndex, Key: "even"})
		env.feed.hub.setWindowLimits(2, 1<<20)
		fromLog := env.watch(t, WatchOptions{Resource: "configmaps", Index: parityIndex, Key: "even"})
		env.write(t, OpCreate, Key{"configmaps", "ns1", "f"}) // 10: even
		wantRevisions(t, "even, replayed from the window", receive(t, fromWindow, 6), 2, 4, 6, 7, 8, 10)
		wantRevisions(t, "even, replayed from the log", receive(t, fromLog, 6), 2, 4, 6, 7, 8, 10)
		env.write(t, OpCreate, Key{"configmaps", "ns1", "g"}) // 11: odd, and the odd watchers' next
		wantRevisions(t, "odd, after the even event", receive(t, odd, 1), 11)
		wantRevisions(t, "odd in ns1, after the even event", receive(t, oddNS1, 1), 11)
	})
}

func TestWatchKeyNeedsIndex(t *testing.T) {
	env := openMemoryEnv(t, 0)
	if _, err := env.feed.watch(context.Background(), WatchOptions{Resource: "configmaps", Key: "odd"}); err == nil {
		t.Fatal("a watch with a key and no index started")
	}
}

// An event that cannot be read is filed under every key: each indexed watcher of its namespace
// gets it, as it may have been about the watcher's key.
func TestWatchUnreadableEventReachesEveryKey(t *testing.T) {
	env := openMemoryEnv(t, 0)
	odd := env.watch(t, WatchOptions{Resource: "configmaps", Index: parityIndex, Key: "odd"})
	evenNS1 := env.watch(t, WatchOptions{Resource: "configmaps", Namespace: "ns1", Index: parityIndex, Key: "even"})
	evenNS2 := env.watch(t, WatchOptions{Resource: "configmaps", Namespace: "ns2", Index: parityIndex, Key: "even"})
	// Published as the feed would publish a row the Transformer could not read (the feed
	// has nothing else to publish: nothing is written).
	unreadable := &Event{Op: OpCreate, Revision: 2, Object: Object{Key: Key{"configmaps", "ns1", "a"}, Revision: 2},
		Err: &UnreadableError{Key: Key{"configmaps", "ns1", "a"}, Err: errors.New("no key")}}
	env.feed.hub.publish([]*Event{unreadable}, 2)
	wantRevisions(t, "odd", receive(t, odd, 1), 2)
	wantRevisions(t, "even in ns1", receive(t, evenNS1, 1), 2)
	env.feed.hub.mu.Lock()
	defer env.feed.hub.mu.Unlock()
	if queued := len(evenNS2.events); queued != 0 {
		t.Fatalf("the watcher of another namespace got %d events", queued)
	}
}

// A write's Attached reaches its event, and the next event of the key as its Prev's; events
// read from the log have none.
func TestWatchEventsCarryAttached(t *testing.T) {
	sqltestBackends(t, func(t *testing.T, env *feedEnv) {
		live := env.watch(t, WatchOptions{Resource: "configmaps"})
		key := Key{"configmaps", "ns", "a"}
		created := writeAttached(t, env.store, Write{Op: OpCreate, Key: key, Attached: "v1"})
		writeAttached(t, env.store, Write{Op: OpUpdate, Key: key, ExpectedRevision: created, Attached: "v2"})
		events := receive(t, live, 2)
		if events[0].Object.Attached != "v1" || events[1].Object.Attached != "v2" || events[1].Prev.Attached != "v1" {
			t.Fatalf("attached: %v, then %v (prev %v); want v1, then v2 (prev v1)",
				events[0].Object.Attached, events[1].Object.Attached, events[1].Prev.Attached)
		}
		env.feed.hub.setWindowLimits(0, 0)
		replayed := receive(t, env.watch(t, WatchOptions{Resource: "configmaps"}), 2)
		if replayed[0].Object.Attached != nil || replayed[1].Object.Attached != nil || replayed[1].Prev.Attached != nil {
			t.Fatal("an event read from the log carries what a write attached")
		}
	})
}

// sqltestBackends runs fn on a store on each database backend.
func sqltestBackends(t *testing.T, fn func(t *testing.T, env *feedEnv)) {
	for _, b := range feedBackends()[1:] {
		t.Run(b.name, func(t *testing.T) { fn(t, b.open(t, 0)) })
	}
}

// writeAttached writes w, rendered as testValue, and returns its revision.
func writeAttached(t *testing.T, s *Store, w Write) int64 {
	t.Helper()
	w.Render = func(revision int64) ([]byte, error) { return testValue(w.Key, revision), nil }
	obj, err := s.Write(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	return obj.Revision
}
