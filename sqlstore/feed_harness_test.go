package sqlstore

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// receiveTimeout bounds every wait for an event in these tests.
const receiveTimeout = 10 * time.Second

// feedEnv is one backend under test: a feed, the log behind it, and a way to write to it.
type feedEnv struct {
	store   *Store // nil for the in-memory log
	feed    *feed
	log     changeLog
	write   func(t testing.TB, op Op, key Key) int64
	compact func(t testing.TB, revision int64)

	mu        sync.Mutex
	revisions map[Key]int64 // each key's latest revision, for preconditions
}

type feedBackend struct {
	name string
	open func(t testing.TB, watchBuffer int) *feedEnv
}

// feedBackends are the backends every feed scenario runs on: an in-memory log that exercises the
// feed and hub alone, and the real stores.
func feedBackends() []feedBackend {
	return []feedBackend{
		{"memory", openMemoryEnv},
		{"sqlite", func(t testing.TB, buffer int) *feedEnv { return openDSNEnv(t, sqltest.SQLiteDSN(t), buffer) }},
		{"postgres", func(t testing.TB, buffer int) *feedEnv { return openDSNEnv(t, sqltest.PostgresDSN(t), buffer) }},
	}
}

func forEachFeedBackend(t *testing.T, scenario func(t *testing.T, open func(t testing.TB, watchBuffer int) *feedEnv)) {
	for _, b := range feedBackends() {
		t.Run(b.name, func(t *testing.T) { scenario(t, b.open) })
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testValue is what every write in these tests stores: the key's name and the revision.
func testValue(key Key, revision int64) []byte {
	return fmt.Appendf(nil, `{"name":%q,"rv":%d}`, key.Name, revision)
}

func openMemoryEnv(t testing.TB, watchBuffer int) *feedEnv {
	log := &memLog{}
	f := newFeedOn(log, nil, quietLogger(), watchBuffer)
	ctx, cancel := context.WithCancel(context.Background())
	go f.run(ctx)
	t.Cleanup(func() {
		cancel()
		<-f.stopped
	})
	env := &feedEnv{feed: f, log: log, revisions: map[Key]int64{}}
	env.write = func(t testing.TB, op Op, key Key) int64 {
		// Like the committer, hand the feed each write in revision order; every third write
		// is another replica's, which the feed reads from the log.
		env.mu.Lock()
		defer env.mu.Unlock()
		if log.next()%3 == 0 {
			rev := log.append(op, key)
			f.wake(rev)
			return rev
		}
		return env.writeLocalLocked(op, key)
	}
	env.compact = func(t testing.TB, revision int64) { log.compact(revision) }
	return env
}

// writeLocal writes to a memory env's log as the committer does: it hands the feed the write's
// event, which the feed then need not read.
func (env *feedEnv) writeLocal(op Op, key Key) int64 {
	env.mu.Lock()
	defer env.mu.Unlock()
	return env.writeLocalLocked(op, key)
}

func (env *feedEnv) writeLocalLocked(op Op, key Key) int64 {
	log := env.log.(*memLog)
	rev := log.append(op, key)
	ev := log.event(rev)
	w := Write{Op: op, Key: key}
	if ev.Prev != nil {
		w.ExpectedRevision = ev.Prev.Revision
	}
	env.feed.handOff([]*pendingWrite{{write: w}}, []writeResult{{obj: ev.Object}}, rev)
	return rev
}

func openDSNEnv(t testing.TB, dsn string, watchBuffer int) *feedEnv {
	return openStoreEnv(t, dsn, Options{Logger: quietLogger(), WatchBuffer: watchBuffer})
}

func openStoreEnv(t testing.TB, dsn string, opts Options) *feedEnv {
	s, err := Open(context.Background(), sqltest.Database(t, dsn, SQLite, Postgres), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return storeEnv(s)
}

func storeEnv(s *Store) *feedEnv {
	env := &feedEnv{store: s, feed: s.feed, log: s.feed.log, revisions: map[Key]int64{}}
	env.write = func(t testing.TB, op Op, key Key) int64 {
		env.mu.Lock()
		expected := env.revisions[key]
		env.mu.Unlock()
		obj, err := s.Write(context.Background(), Write{
			Op: op, Key: key, ExpectedRevision: expected,
			Render: func(revision int64) ([]byte, error) { return testValue(key, revision), nil },
		})
		if err != nil {
			t.Errorf("%s %v: %v", op, key, err)
			return 0
		}
		env.mu.Lock()
		env.revisions[key] = obj.Revision
		env.mu.Unlock()
		return obj.Revision
	}
	env.compact = func(t testing.TB, revision int64) {
		if err := s.Compact(context.Background(), revision); err != nil {
			t.Fatalf("Compact(%d): %v", revision, err)
		}
	}
	return env
}

func (env *feedEnv) current(t testing.TB) int64 {
	current, _, err := env.log.bounds(context.Background())
	if err != nil {
		t.Fatalf("reading the current revision: %v", err)
	}
	return current
}

// settle waits until the feed has published everything written so far, and returns that
// revision.
func (env *feedEnv) settle(t testing.TB) int64 {
	current := env.current(t)
	waitFor(t, "the feed to publish everything written", func() bool { return env.feed.last.Load() >= current })
	return current
}

func (env *feedEnv) watch(t testing.TB, opts WatchOptions) *Watcher {
	w, err := env.feed.watch(context.Background(), opts)
	if err != nil {
		t.Fatalf("Watch(%+v): %v", opts, err)
	}
	t.Cleanup(w.Close)
	return w
}

// logEvents reads the log's events of one selection in (after, through].
func (env *feedEnv) logEvents(t testing.TB, resource, namespace string, after, through int64) []*Event {
	events, err := env.log.read(context.Background(), resource, namespace, after, through, 1<<30)
	if err != nil {
		t.Fatalf("reading the log: %v", err)
	}
	return events
}

// logAfter describes the log's events of one selection in (after, through].
func (env *feedEnv) logAfter(t testing.TB, resource, namespace string, after, through int64) []string {
	return describeAll(env.logEvents(t, resource, namespace, after, through))
}

// describe renders an event for exact comparison.
func describe(ev *Event) string {
	if ev.Progress {
		return fmt.Sprintf("progress@%d", ev.Revision)
	}
	o := ev.Object
	s := fmt.Sprintf("%s %s/%s/%s@%d %s", ev.Op, o.Resource, o.Namespace, o.Name, ev.Revision, o.Value)
	if o.Revision != ev.Revision {
		s += fmt.Sprintf(" (object@%d)", o.Revision)
	}
	if ev.Prev != nil {
		s += fmt.Sprintf(" prev@%d %s", ev.Prev.Revision, ev.Prev.Value)
	}
	return s
}

func describeAll(events []*Event) []string {
	out := make([]string, len(events))
	for i, ev := range events {
		out[i] = describe(ev)
	}
	return out
}

// receive waits for the next n events.
func receive(t testing.TB, w *Watcher, n int) []*Event {
	t.Helper()
	var got []*Event
	deadline := time.After(receiveTimeout)
	for len(got) < n {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("watch ended after %d of %d events (err %v): %s", len(got), n, w.Err(), strings.Join(describeAll(got), "; "))
			}
			got = append(got, ev)
		case <-deadline:
			t.Fatalf("timed out after %d of %d events: %s", len(got), n, strings.Join(describeAll(got), "; "))
		}
	}
	return got
}

// receiveThrough waits for events up to and including revision.
func receiveThrough(t testing.TB, w *Watcher, revision int64) []*Event {
	t.Helper()
	var got []*Event
	for len(got) == 0 || got[len(got)-1].Revision < revision {
		got = append(got, receive(t, w, 1)...)
	}
	return got
}

// expectEnd drains w until its channel closes, and checks why it ended.
func expectEnd(t testing.TB, w *Watcher, want error) []*Event {
	t.Helper()
	var got []*Event
	deadline := time.After(receiveTimeout)
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				if err := w.Err(); !reflect.DeepEqual(err, want) {
					t.Fatalf("watch ended with %v, want %v", err, want)
				}
				return got
			}
			got = append(got, ev)
		case <-deadline:
			t.Fatalf("watch did not end; received %d events", len(got))
		}
	}
}

// expectQuiet checks that w has nothing more to deliver: it creates marker through env (a key w
// watches) and expects that create to be w's next event. Events come in revision order, so an
// extra event, however late, comes before the marker; a look at the channel without a write
// could not tell a late event from none.
func expectQuiet(t testing.TB, env *feedEnv, w *Watcher, marker Key) {
	t.Helper()
	rev := env.write(t, OpCreate, marker)
	if ev := receive(t, w, 1)[0]; ev.Revision != rev {
		t.Fatalf("unexpected event %s before the marker written at revision %d", describe(ev), rev)
	}
}

func equalLines(t testing.TB, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\ngot  %d:\n  %s\nwant %d:\n  %s", what, len(got), strings.Join(got, "\n  "), len(want), strings.Join(want, "\n  "))
	}
}

// memLog is an in-memory revision log with the database's semantics.
type memLog struct {
	mu        sync.Mutex
	rows      []*Event // rows[i] has revision i+1
	latest    map[Key]int64
	compacted int64
	failing   error
	failures  int // calls answered with failing
}

func (l *memLog) append(op Op, key Key) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.latest == nil {
		l.latest = map[Key]int64{}
	}
	rev := int64(len(l.rows)) + 1
	ev := &Event{Op: op, Revision: rev, Object: Object{Key: key, Revision: rev, Value: testValue(key, rev)}}
	if prev := l.latest[key]; prev > 0 {
		p := l.rows[prev-1].Object
		ev.Prev = &p
	}
	l.rows = append(l.rows, ev)
	l.latest[key] = rev
	return rev
}

// next is the revision the next append takes.
func (l *memLog) next() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.rows)) + 1
}

func (l *memLog) event(revision int64) *Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rows[revision-1]
}

func (l *memLog) compact(revision int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.compacted = revision
}

func (l *memLog) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failing = err
}

func (l *memLog) failed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failures
}

func (l *memLog) bounds(ctx context.Context) (int64, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failing != nil {
		l.failures++
	}
	return int64(len(l.rows)), l.compacted, l.failing
}

// read returns fresh events, as each database read does.
func (l *memLog) read(ctx context.Context, resource, namespace string, after, through int64, limit int) ([]*Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failing != nil {
		l.failures++
		return nil, l.failing
	}
	var out []*Event
	for _, row := range l.rows[after:min(through, int64(len(l.rows)))] {
		if len(out) == limit {
			break
		}
		o := row.Object
		if resource != "" && (o.Resource != resource || namespace != "" && o.Namespace != namespace) {
			continue
		}
		out = append(out, &Event{Op: row.Op, Revision: row.Revision, Object: o, Prev: row.Prev})
	}
	return out, nil
}
