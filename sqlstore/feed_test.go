package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// openReplicas opens two Stores on one new PostgreSQL database, as two server replicas.
func openReplicas(t *testing.T) (writer, reader *feedEnv) {
	dsn := sqltest.PostgresDSN(t)
	return openDSNEnv(t, dsn, 0), openDSNEnv(t, dsn, 0)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(receiveTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFeedAcrossReplicasNotifies: writes through one replica reach the other's watchers through
// NOTIFY, not only by its fallback poll. The events would come either way, so no clock could tell
// which brought them; the reader's feed counts the notifications that woke it instead.
func TestFeedAcrossReplicasNotifies(t *testing.T) {
	dsn := sqltest.PostgresDSN(t)
	writer := openDSNEnv(t, dsn, 0)
	wakes := &notifyCounter{}
	reader := openStoreEnv(t, dsn, Options{Logger: quietLogger(), Observer: wakes})
	w := reader.watch(t, WatchOptions{Resource: "configmaps"})
	write := func(name string) int64 { return writer.write(t, OpCreate, Key{"configmaps", "ns", name}) }
	writeUntilNotified(t, reader, write)
	got := receiveThrough(t, w, reader.current(t))

	// A notification of the last writes above may still be on its way and counted here: two at
	// most, as those writes stopped at the first one to arrive.
	const writes, stragglers = 20, 2
	before := wakes.notified.Load()
	for i := range writes {
		got = append(got, receiveThrough(t, w, write(fmt.Sprintf("k%d", i)))...)
	}
	waitFor(t, "the writes' notifications to wake the reader", func() bool {
		return wakes.notified.Load()-before >= writes-stragglers
	})
	equalLines(t, "other replica's events", describeAll(got), reader.logAfter(t, "configmaps", "", 0, reader.current(t)))
	expectQuiet(t, writer, w, Key{"configmaps", "ns", "quiet"})
}

// notifyCounter counts the change feed's wake-ups by a PostgreSQL notification.
type notifyCounter struct {
	nopObserver
	notified atomic.Int64
}

func (c *notifyCounter) Woken(reason string) {
	if reason == "notify" {
		c.notified.Add(1)
	}
}

// TestFeedAcrossReplicasSurvivesListenerLoss kills the LISTEN connections while one replica
// keeps writing: the other replica's watcher still receives every event exactly once, in order,
// and its listener reconnects.
func TestFeedAcrossReplicasSurvivesListenerLoss(t *testing.T) {
	writer, reader := openReplicas(t)
	w := reader.watch(t, WatchOptions{Resource: "configmaps"})
	write := func(name string) int64 { return writer.write(t, OpCreate, Key{"configmaps", "ns", name}) }
	writeUntilNotified(t, reader, write)
	before := reader.current(t)
	receiveThrough(t, w, before)

	killListeners(t, writer.store)
	waitFor(t, "the reader to notice its listener is gone", func() bool { return !reader.feed.listening.Load() })
	writeUntilNotified(t, reader, write)
	final := write("after")
	equalLines(t, "events across the listener's loss", describeAll(receiveThrough(t, w, final)), reader.logAfter(t, "configmaps", "", before, final))
	expectQuiet(t, writer, w, Key{"configmaps", "ns", "quiet"})
}

// writeUntilNotified writes until a notification reaches env's listener: one issued before its
// LISTEN took effect is never delivered.
func writeUntilNotified(t testing.TB, env *feedEnv, write func(name string) int64) {
	t.Helper()
	start := env.current(t)
	i := 0
	waitFor(t, "a notification to reach the listener", func() bool {
		write(fmt.Sprintf("until-notified-%d-%d", start, i))
		i++
		return env.feed.listening.Load()
	})
}

// killListeners ends every LISTEN session on the store's database, as a failover or network cut
// would.
func killListeners(t testing.TB, s *Store) {
	t.Helper()
	var killed int
	err := s.db.Writer.QueryRowContext(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`).Scan(&killed)
	if err != nil {
		t.Fatalf("terminating the listeners: %v", err)
	}
	if killed == 0 {
		t.Fatal("found no listener session to terminate")
	}
}

// TestFeedRecoversFromReadErrors: while the log cannot be read the feed retries, and then
// publishes everything it missed, in order.
func TestFeedRecoversFromReadErrors(t *testing.T) {
	env := openMemoryEnv(t, 0)
	log := env.log.(*memLog)
	w := env.watch(t, WatchOptions{Resource: "configmaps"})
	log.fail(errors.New("database unreachable"))
	for i := range 3 {
		writeRemote(env, OpCreate, Key{"configmaps", "ns", fmt.Sprintf("k%d", i)})
	}
	waitFor(t, "the feed to fail a read", func() bool { return log.failed() > 0 })
	log.fail(nil)
	equalLines(t, "after recovery", describeAll(receive(t, w, 3)), env.logAfter(t, "configmaps", "", 0, 3))
}

// writeRemote writes to a memory env's log as another replica would: the feed learns of the write
// only by reading the log.
func writeRemote(env *feedEnv, op Op, key Key) {
	env.feed.wake(env.log.(*memLog).append(op, key))
}

// TestFeedHandOffReadsWhatItLacks: events handed over by the committer are published as they are
// when they follow what the feed has published and their previous state is in the window;
// otherwise the feed reads the gap, or the event, from the log. Either way watchers get the log's
// events, in order, each once.
func TestFeedHandOffReadsWhatItLacks(t *testing.T) {
	env := openMemoryEnv(t, 0)
	env.feed.hub.setWindowLimits(3, 1<<20)
	w := env.watch(t, WatchOptions{Resource: "configmaps"})
	key := func(i int) Key { return Key{"configmaps", "ns", fmt.Sprintf("k%d", i)} }
	env.writeLocal(OpCreate, key(0))
	for i := 1; i <= 4; i++ {
		env.writeLocal(OpCreate, key(i)) // pushes k0 out of the window
	}
	env.settle(t)
	env.writeLocal(OpUpdate, key(0)) // its previous state is read from the log
	env.writeLocal(OpUpdate, key(4)) // its previous state is in the window
	writeRemote(env, OpDelete, key(1))
	env.writeLocal(OpDelete, key(4)) // after a revision only the log has
	equalLines(t, "events", describeAll(receive(t, w, 9)), env.logAfter(t, "configmaps", "", 0, 9))
}

// TestFeedCompactedWhileUnreadable: history compacted while the feed could not read it ends the
// watchers with a CompactedError instead of skipping events; the feed goes on after it.
func TestFeedCompactedWhileUnreadable(t *testing.T) {
	env := openMemoryEnv(t, 0)
	log := env.log.(*memLog)
	w := env.watch(t, WatchOptions{Resource: "configmaps"})
	log.fail(errors.New("database unreachable"))
	for i := range 5 {
		writeRemote(env, OpCreate, Key{"configmaps", "ns", fmt.Sprintf("k%d", i)})
	}
	waitFor(t, "the feed to fail a read", func() bool { return log.failed() > 0 })
	log.compact(3)
	log.fail(nil)
	expectEnd(t, w, &CompactedError{Requested: 0, Compacted: 3})
	after := env.watch(t, WatchOptions{Resource: "configmaps", After: 3})
	env.write(t, OpCreate, Key{"configmaps", "ns", "later"})
	equalLines(t, "after the compacted revision", describeAll(receive(t, after, 3)), env.logAfter(t, "configmaps", "", 3, 6))
}

// TestFeedStartsWithRecentHistory: a feed starting on an existing log fills its window with the
// latest events, so watches resumed after a restart replay from memory.
func TestFeedStartsWithRecentHistory(t *testing.T) {
	log := &memLog{}
	for i := range 30 {
		log.append(OpCreate, Key{"configmaps", "ns", fmt.Sprintf("k%d", i)})
	}
	log.compact(12)
	for _, window := range []int{10, 25} {
		f := newFeedOn(log, nil, quietLogger(), 0)
		f.hub.setWindowLimits(window, 1<<20)
		ctx, cancel := context.WithCancel(context.Background())
		go f.run(ctx)
		waitFor(t, "the feed to reach the current revision", func() bool { return f.last.Load() == 30 })
		f.hub.mu.Lock()
		got, start := windowRevisions(f.hub), f.hub.windowStart
		f.hub.mu.Unlock()
		cancel()
		<-f.stopped
		wantStart := max(12, 30-int64(window))
		if start != wantStart || len(got) != int(30-wantStart) || got[0] != wantStart+1 {
			t.Fatalf("window of %d: holds %v after %d; want (%d, 30]", window, got, start, wantStart)
		}
	}
}

// TestFeedAcrossReplicasConcurrentWriters writes through both replicas at once: the watchers of
// each receive exactly the shared log, in order, whichever replica made each write.
func TestFeedAcrossReplicasConcurrentWriters(t *testing.T) {
	a, b := openReplicas(t)
	watchers := []*Watcher{
		a.watch(t, WatchOptions{Resource: "configmaps"}),
		b.watch(t, WatchOptions{Resource: "configmaps"}),
		b.watch(t, WatchOptions{Resource: "configmaps", Namespace: "ns1"}),
	}
	var wg sync.WaitGroup
	for r, env := range []*feedEnv{a, b} {
		for g := range 10 {
			wg.Go(func() {
				for i := range 30 {
					key := Key{"configmaps", fmt.Sprintf("ns%d", g%2), fmt.Sprintf("r%d-g%d-k%d", r, g, i%3)}
					op := OpCreate
					if i >= 3 {
						op = OpUpdate
					}
					env.write(t, op, key)
				}
			})
		}
	}
	wg.Wait()
	final := a.current(t)
	for i, w := range watchers {
		want := a.logEvents(t, "configmaps", w.opts.Namespace, 0, final)
		got := receiveThrough(t, w, want[len(want)-1].Revision)
		equalLines(t, fmt.Sprintf("watcher %d", i), describeAll(got), describeAll(want))
	}
}
