package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestWatchCreateUpdateDelete(t *testing.T) {
	forEachFeedBackend(t, func(t *testing.T, open func(testing.TB, int) *feedEnv) {
		env := open(t, 0)
		w := env.watch(t, WatchOptions{Resource: "configmaps"})
		a := Key{"configmaps", "ns1", "a"}
		env.write(t, OpCreate, a)
		env.write(t, OpUpdate, a)
		env.write(t, OpDelete, a)
		equalLines(t, "events", describeAll(receive(t, w, 3)), []string{
			`create configmaps/ns1/a@1 {"name":"a","rv":1}`,
			`update configmaps/ns1/a@2 {"name":"a","rv":2} prev@1 {"name":"a","rv":1}`,
			`delete configmaps/ns1/a@3 {"name":"a","rv":3} prev@2 {"name":"a","rv":2}`,
		})
		expectQuiet(t, env, w, Key{"configmaps", "ns1", "quiet"})
	})
}

func TestWatchFiltersResourceAndNamespace(t *testing.T) {
	forEachFeedBackend(t, func(t *testing.T, open func(testing.TB, int) *feedEnv) {
		env := open(t, 0)
		all := env.watch(t, WatchOptions{Resource: "configmaps"})
		ns1 := env.watch(t, WatchOptions{Resource: "configmaps", Namespace: "ns1"})
		ns2 := env.watch(t, WatchOptions{Resource: "configmaps", Namespace: "ns2"})
		nodes := env.watch(t, WatchOptions{Resource: "nodes"})
		env.write(t, OpCreate, Key{"configmaps", "ns1", "a"})
		env.write(t, OpCreate, Key{"secrets", "ns1", "a"})
		env.write(t, OpCreate, Key{"configmaps", "ns2", "b"})
		env.write(t, OpCreate, Key{"nodes", "", "n1"})
		env.write(t, OpCreate, Key{"configmaps", "ns1", "c"})

		equalLines(t, "all namespaces", describeAll(receive(t, all, 3)), []string{
			`create configmaps/ns1/a@1 {"name":"a","rv":1}`,
			`create configmaps/ns2/b@3 {"name":"b","rv":3}`,
			`create configmaps/ns1/c@5 {"name":"c","rv":5}`,
		})
		equalLines(t, "ns1", describeAll(receive(t, ns1, 2)), []string{
			`create configmaps/ns1/a@1 {"name":"a","rv":1}`,
			`create configmaps/ns1/c@5 {"name":"c","rv":5}`,
		})
		equalLines(t, "ns2", describeAll(receive(t, ns2, 1)), []string{`create configmaps/ns2/b@3 {"name":"b","rv":3}`})
		equalLines(t, "nodes", describeAll(receive(t, nodes, 1)), []string{`create nodes//n1@4 {"name":"n1","rv":4}`})
		// all's marker is in a namespace the others do not watch; the later markers also reach
		// all, which is checked by then.
		expectQuiet(t, env, all, Key{"configmaps", "ns3", "quiet"})
		expectQuiet(t, env, ns1, Key{"configmaps", "ns1", "quiet"})
		expectQuiet(t, env, ns2, Key{"configmaps", "ns2", "quiet"})
		expectQuiet(t, env, nodes, Key{"nodes", "", "quiet"})
	})
}

// TestWatchConcurrentWritersGapless runs 50 writers on many keys while 20 watchers start at
// different points: every watcher must receive exactly the log after its start, in order.
func TestWatchConcurrentWritersGapless(t *testing.T) {
	const writers, writesEach, watchers = 50, 20, 20
	forEachFeedBackend(t, func(t *testing.T, open func(testing.TB, int) *feedEnv) {
		env := open(t, 100000)
		type started struct {
			w     *Watcher
			after int64
			ns    string
		}
		var (
			mu    sync.Mutex
			watch []started
		)
		startWatcher := func(i int) {
			opts := WatchOptions{Resource: "configmaps", After: env.current(t)}
			if i%4 == 3 {
				opts.Namespace = fmt.Sprintf("ns%d", i%3)
			}
			w := env.watch(t, opts)
			mu.Lock()
			watch = append(watch, started{w, opts.After, opts.Namespace})
			mu.Unlock()
		}
		for i := range watchers / 2 {
			startWatcher(i)
		}
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				for j := range writesEach {
					key := Key{"configmaps", fmt.Sprintf("ns%d", i%3), fmt.Sprintf("w%d-k%d", i, j%5)}
					op := OpCreate
					if j >= 5 {
						op = OpUpdate
					}
					env.write(t, op, key)
					if i < watchers/2 && j == writesEach/2 {
						startWatcher(watchers/2 + i) // the rest start mid-stream
					}
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		final := env.current(t)
		for _, s := range watch {
			want := env.logEvents(t, "configmaps", s.ns, s.after, final)
			if len(want) == 0 {
				continue
			}
			got := receiveThrough(t, s.w, want[len(want)-1].Revision)
			equalLines(t, fmt.Sprintf("watcher after %d in %q", s.after, s.ns), describeAll(got), describeAll(want))
		}
	})
}

func TestWatchResumeFromLastRevision(t *testing.T) {
	forEachFeedBackend(t, func(t *testing.T, open func(testing.TB, int) *feedEnv) {
		env := open(t, 0)
		first := env.watch(t, WatchOptions{Resource: "configmaps"})
		for i := range 10 {
			env.write(t, OpCreate, Key{"configmaps", "ns", fmt.Sprintf("k%d", i)})
		}
		seen := receive(t, first, 4)
		first.Close()
		expectEnd(t, first, nil)
		for i := range 5 {
			env.write(t, OpCreate, Key{"configmaps", "ns", fmt.Sprintf("later%d", i)})
		}
		resumed := env.watch(t, WatchOptions{Resource: "configmaps", After: seen[len(seen)-1].Revision})
		got := append(seen, receive(t, resumed, 11)...)
		equalLines(t, "first then resumed", describeAll(got), env.logAfter(t, "configmaps", "", 0, env.current(t)))
		expectQuiet(t, env, resumed, Key{"configmaps", "ns", "quiet"})
	})
}

// TestWatchReplaysFromLogBeforeWindow starts watches older than a tiny window: they replay from
// the log (in several pages), switch to the window, and then follow the feed, with nothing
// missed or repeated.
func TestWatchReplaysFromLogBeforeWindow(t *testing.T) {
	forEachFeedBackend(t, func(t *testing.T, open func(testing.TB, int) *feedEnv) {
		env := open(t, 0)
		env.feed.hub.setWindowLimits(20, 1<<20)
		writeMany(t, env, 2*replayPage+30)
		env.settle(t)
		w := env.watch(t, WatchOptions{Resource: "configmaps", After: 3})
		ns := env.watch(t, WatchOptions{Resource: "configmaps", Namespace: "ns1", After: 3})
		writeMany(t, env, 200) // while the replays run
		final := env.current(t)
		equalLines(t, "replayed", describeAll(receiveThrough(t, w, final)), env.logAfter(t, "configmaps", "", 3, final))
		wantNS := env.logAfter(t, "configmaps", "ns1", 3, final)
		equalLines(t, "replayed ns1", describeAll(receive(t, ns, len(wantNS))), wantNS)
		expectQuiet(t, env, w, Key{"configmaps", "ns1", "quiet"})
	})
}

// writeMany creates n keys across three namespaces with 10 concurrent writers.
func writeMany(t testing.TB, env *feedEnv, n int) {
	var wg sync.WaitGroup
	base := env.current(t)
	for i := range 10 {
		wg.Go(func() {
			for j := i; j < n; j += 10 {
				env.write(t, OpCreate, Key{"configmaps", fmt.Sprintf("ns%d", j%3), fmt.Sprintf("k%d-%d", base, j)})
			}
		})
	}
	wg.Wait()
}

func TestWatchCompactedAndFutureRevisions(t *testing.T) {
	forEachFeedBackend(t, func(t *testing.T, open func(testing.TB, int) *feedEnv) {
		env := open(t, 0)
		writeMany(t, env, 10)
		env.compact(t, 6)
		ctx := context.Background()

		_, err := env.feed.watch(ctx, WatchOptions{Resource: "configmaps", After: 5})
		var compacted *CompactedError
		if !errors.As(err, &compacted) || compacted.Requested != 5 || compacted.Compacted != 6 {
			t.Fatalf("watch after 5 with 6 compacted: %v, want CompactedError{5, 6}", err)
		}
		_, err = env.feed.watch(ctx, WatchOptions{Resource: "configmaps", After: 11})
		var future *FutureRevisionError
		if !errors.As(err, &future) || future.Requested != 11 || future.Current != 10 {
			t.Fatalf("watch after 11 with 10 current: %v, want FutureRevisionError{11, 10}", err)
		}
		w := env.watch(t, WatchOptions{Resource: "configmaps", After: 6})
		equalLines(t, "after the compacted revision", describeAll(receive(t, w, 4)), env.logAfter(t, "configmaps", "", 6, 10))
	})
}

// TestWatchTooSlowIsClosed: a watcher that stops reading is ended with ErrWatcherTooSlow when
// its buffer overflows, while another keeps receiving everything.
func TestWatchTooSlowIsClosed(t *testing.T) {
	forEachFeedBackend(t, func(t *testing.T, open func(testing.TB, int) *feedEnv) {
		const buffer = channelBuffer + 24 // fills the channel and the overflow
		env := open(t, buffer)
		stalled := env.watch(t, WatchOptions{Resource: "configmaps"})
		reading := env.watch(t, WatchOptions{Resource: "configmaps"})
		var got []*Event
		for i := range 3 * buffer {
			rev := env.write(t, OpCreate, Key{"configmaps", "ns", fmt.Sprintf("k%d", i)})
			got = append(got, receiveThrough(t, reading, rev)...)
		}
		equalLines(t, "reading watcher", describeAll(got), env.logAfter(t, "configmaps", "", 0, env.current(t)))
		// What the channel still holds is delivered; the overflow is dropped with the watcher.
		queued := expectEnd(t, stalled, ErrWatcherTooSlow)
		equalLines(t, "stalled watcher's channel", describeAll(queued), describeAll(got[:channelBuffer]))
	})
}

func TestWatchProgress(t *testing.T) {
	forEachFeedBackend(t, func(t *testing.T, open func(testing.TB, int) *feedEnv) {
		env := open(t, 0)
		w := env.watch(t, WatchOptions{Resource: "configmaps"})
		secrets := env.watch(t, WatchOptions{Resource: "secrets"})
		w.RequestProgress()
		equalLines(t, "progress with no writes", describeAll(receive(t, w, 1)), []string{"progress@0"})

		// Progress carries the feed's revision, even when it is another resource's event.
		env.write(t, OpCreate, Key{"configmaps", "ns", "a"})
		env.write(t, OpCreate, Key{"secrets", "ns", "b"})
		receive(t, secrets, 1)
		w.RequestProgress()
		equalLines(t, "event then progress", describeAll(receive(t, w, 2)), []string{
			`create configmaps/ns/a@1 {"name":"a","rv":1}`,
			"progress@2",
		})

		// Progress comes after the events already queued.
		env.write(t, OpCreate, Key{"configmaps", "ns", "c"})
		env.write(t, OpCreate, Key{"secrets", "ns", "d"})
		receive(t, secrets, 1)
		w.RequestProgress()
		env.write(t, OpCreate, Key{"configmaps", "ns", "e"})
		equalLines(t, "queued, progress, then later events", describeAll(receive(t, w, 3)), []string{
			`create configmaps/ns/c@3 {"name":"c","rv":3}`,
			"progress@4",
			`create configmaps/ns/e@5 {"name":"e","rv":5}`,
		})
		expectQuiet(t, env, w, Key{"configmaps", "ns", "quiet"})
	})
}

// TestWatchProgressWhileCatchingUp: a progress request during a replay comes after the events
// replayed before it and claims only revisions already delivered.
func TestWatchProgressWhileCatchingUp(t *testing.T) {
	forEachFeedBackend(t, func(t *testing.T, open func(testing.TB, int) *feedEnv) {
		env := open(t, 0)
		env.feed.hub.setWindowLimits(5, 1<<20)
		writeMany(t, env, 50)
		env.settle(t)
		w := env.watch(t, WatchOptions{Resource: "configmaps"})
		w.RequestProgress()
		var delivered []*Event
		for {
			ev := receive(t, w, 1)[0]
			if ev.Progress {
				equalLines(t, "events before progress@"+fmt.Sprint(ev.Revision), describeAll(delivered), env.logAfter(t, "configmaps", "", 0, ev.Revision))
				break
			}
			delivered = append(delivered, ev)
		}
		rest := receiveThrough(t, w, 50)
		equalLines(t, "all events", describeAll(append(delivered, rest...)), env.logAfter(t, "configmaps", "", 0, 50))
	})
}

func TestWatchCloseAndCancel(t *testing.T) {
	forEachFeedBackend(t, func(t *testing.T, open func(testing.TB, int) *feedEnv) {
		env := open(t, 2)
		writeMany(t, env, 5)
		env.settle(t) // so that the watch from 0 replays, rather than overflows its buffer of 2
		ctx, cancel := context.WithCancel(context.Background())
		live, err := env.feed.watch(ctx, WatchOptions{Resource: "configmaps", After: 5})
		if err != nil {
			t.Fatal(err)
		}
		replaying, err := env.feed.watch(ctx, WatchOptions{Resource: "configmaps"})
		if err != nil {
			t.Fatal(err)
		}
		closed := env.watch(t, WatchOptions{Resource: "configmaps", After: 5})
		closed.Close()
		expectEnd(t, closed, nil)
		cancel()
		expectEnd(t, live, nil)
		expectEnd(t, replaying, nil)
		h := env.feed.hub
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.watchers) != 0 || len(h.byKind) != 0 {
			t.Fatalf("hub still holds %d watchers, %d resources", len(h.watchers), len(h.byKind))
		}
	})
}

// TestWatchLaggingConsumer: a consumer that falls behind by less than its buffer receives
// everything in order, and cancelling it while events wait in its overflow ends it cleanly.
func TestWatchLaggingConsumer(t *testing.T) {
	forEachFeedBackend(t, func(t *testing.T, open func(testing.TB, int) *feedEnv) {
		env := open(t, 10*channelBuffer)
		lagging := env.watch(t, WatchOptions{Resource: "configmaps"})
		ctx, cancel := context.WithCancel(context.Background())
		cancelled, err := env.feed.watch(ctx, WatchOptions{Resource: "configmaps"})
		if err != nil {
			t.Fatal(err)
		}
		writeMany(t, env, 5*channelBuffer)
		final := env.current(t)
		equalLines(t, "lagging consumer", describeAll(receiveThrough(t, lagging, final)), env.logAfter(t, "configmaps", "", 0, final))

		receive(t, cancelled, 1) // the pump may be blocked on a full channel
		cancel()
		expectEnd(t, cancelled, nil)
		env.write(t, OpCreate, Key{"configmaps", "ns", "after-cancel"})
		receive(t, lagging, 1)
	})
}

func TestWatchEndsWhenFeedStops(t *testing.T) {
	log := &memLog{}
	f := newFeedOn(log, nil, quietLogger(), 0)
	ctx, cancel := context.WithCancel(context.Background())
	go f.run(ctx)
	w, err := f.watch(context.Background(), WatchOptions{Resource: "configmaps"})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	expectEnd(t, w, ErrClosed)
	if _, err := f.watch(context.Background(), WatchOptions{Resource: "configmaps"}); err != ErrClosed {
		t.Fatalf("watch after stop: %v, want ErrClosed", err)
	}
}

// TestWatchReplaySkipsOtherResources replays a window mostly made of another resource's events,
// in several bounded scans.
func TestWatchReplaySkipsOtherResources(t *testing.T) {
	env := openMemoryEnv(t, 0)
	for i := range 3 * replayScan {
		resource := "secrets"
		if i%1000 == 0 {
			resource = "configmaps"
		}
		env.write(t, OpCreate, Key{resource, "ns", fmt.Sprintf("k%d", i)})
	}
	final := env.settle(t)
	w := env.watch(t, WatchOptions{Resource: "configmaps"})
	want := env.logAfter(t, "configmaps", "", 0, final)
	equalLines(t, "configmaps only", describeAll(receive(t, w, len(want))), want)
	w.RequestProgress()
	equalLines(t, "then progress", describeAll(receive(t, w, 1)), []string{fmt.Sprintf("progress@%d", final)})
}

// TestWatchChurn starts, reads from, and ends watchers (by Close, by cancellation, by falling
// behind) while writes go on: nothing panics or races, and every watcher receives an unbroken
// run of the log after its start.
func TestWatchChurn(t *testing.T) {
	env := openMemoryEnv(t, 2*channelBuffer)
	env.feed.hub.setWindowLimits(50, 1<<20)
	stop := make(chan struct{})
	var writers sync.WaitGroup
	writers.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
				env.write(t, OpCreate, Key{"configmaps", fmt.Sprintf("ns%d", i%2), fmt.Sprintf("k%d", i)})
			}
		}
	})
	var (
		watchers sync.WaitGroup
		mu       sync.Mutex
		endings  = map[string]int{}
	)
	for g := range 8 {
		watchers.Go(func() {
			for round := range 30 {
				ending := churnOnce(t, env, g, round)
				mu.Lock()
				endings[ending]++
				mu.Unlock()
			}
		})
	}
	watchers.Wait()
	close(stop)
	writers.Wait()
	t.Logf("watch endings: %v", endings)
}

// churnOnce runs one watcher and says how it ended.
func churnOnce(t *testing.T, env *feedEnv, g, round int) string {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := WatchOptions{Resource: "configmaps", After: max(0, env.current(t)-int64(round*7%120))}
	if g%2 == 1 {
		opts.Namespace = "ns1"
	}
	w, err := env.feed.watch(ctx, opts)
	var compacted *CompactedError
	if errors.As(err, &compacted) {
		return "compacted"
	}
	if err != nil {
		t.Error(err)
		return "error"
	}
	var got []*Event
	for len(got) < round%40 {
		ev, ok := <-w.Events()
		if !ok {
			break // fell behind
		}
		if round%5 == 0 {
			w.RequestProgress()
		}
		got = append(got, ev)
	}
	switch round % 3 {
	case 0:
		w.Close()
	case 1:
		cancel()
	}
	for ev := range w.Events() {
		got = append(got, ev)
		if round%3 == 2 && len(got) > 200 {
			w.Close() // this one stopped reading long enough to fall behind, or is slow to end
		}
	}
	checkUnbroken(t, env, opts, got)
	return fmt.Sprint(w.Err())
}

// checkUnbroken checks that events (progress aside) are exactly the log's events after the
// watch's start, up to the last one received.
func checkUnbroken(t *testing.T, env *feedEnv, opts WatchOptions, got []*Event) {
	var events []*Event
	for _, ev := range got {
		if !ev.Progress {
			events = append(events, ev)
		}
	}
	if len(events) == 0 {
		return
	}
	want := env.logEvents(t, opts.Resource, opts.Namespace, opts.After, events[len(events)-1].Revision)
	if !slices.Equal(describeAll(events), describeAll(want)) {
		t.Errorf("watch after %d in %q: got %d events, want %d", opts.After, opts.Namespace, len(events), len(want))
	}
}
