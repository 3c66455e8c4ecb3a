package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// watchSummary is the watch fan-out part of a report.
type watchSummary struct {
	Watchers       int       `json:"watchers"`
	Connected      int       `json:"connected"` // watchers whose watch the server accepted
	Rate           float64   `json:"rate"`      // writes per second asked for
	Writes         opSummary `json:"writes"`    // the writer's creates
	EventsExpected int64     `json:"eventsExpected"`
	EventsReceived int64     `json:"eventsReceived"`
	EventsLost     int64     `json:"eventsLost"`
}

// runWatch measures watch fan-out: --watchers watches on the collection, and one writer creating
// objects at --rate. Each watcher records, for every object it sees created, the time from the
// writer's acknowledgement to the event's arrival (zero when the event beats the acknowledgement).
// Acknowledgement times stay in this process, keyed by the index in the object's name, so no clock
// is compared across machines and the write's own latency is not counted twice.
func (b *bench) runWatch(ctx context.Context) (report, error) {
	startRV, err := b.collectionRevision(ctx)
	if err != nil {
		return report{}, err
	}
	acks := newAckTable(b.maxWrites())
	watchCtx, stopWatchers := context.WithCancel(ctx)
	defer stopWatchers()
	watchers, running := b.startWatchers(watchCtx, acks, startRV)
	if connectedCount(watchers) == 0 {
		stopWatchers()
		running.Wait()
		return report{}, fmt.Errorf("the server accepted none of the watches: %s", firstWatchError(watchers))
	}

	start := time.Now()
	stopProgress := b.startProgress(ctx, start, "events")
	writes := b.writeAtRate(ctx, acks)
	expected := func() int64 { return acks.count() * int64(connectedCount(watchers)) }
	b.awaitDelivery(ctx, expected)
	elapsed := time.Since(start)
	stopWatchers()
	running.Wait()
	stopProgress()

	delivery := recorders{}
	for _, w := range watchers {
		delivery.get(opWatch).merge(w.rec)
	}
	rep := b.newReport(delivery, elapsed)
	rep.Concurrency = 1 // one writer; the watchers are counted below
	rep.Errors += writes.errorCount()
	for code, n := range writes.errors {
		rep.ErrorsByCode[code] += n
	}
	rep.Watch = b.watchSummary(watchers, writes, elapsed, expected())
	return rep, nil
}

func (b *bench) watchSummary(watchers []*watcher, writes *recorder, elapsed time.Duration, expected int64) *watchSummary {
	var received int64
	for _, w := range watchers {
		received += w.received
	}
	return &watchSummary{
		Watchers:       len(watchers),
		Connected:      connectedCount(watchers),
		Rate:           b.opts.rate,
		Writes:         summarize(writes, elapsed),
		EventsExpected: expected,
		EventsReceived: received,
		EventsLost:     max(expected-received, 0),
	}
}

// collectionRevision is the resourceVersion of the collection now: watches start from it, so that
// none misses a write however long it takes to connect.
func (b *bench) collectionRevision(ctx context.Context) (string, error) {
	var list created
	o := b.call(ctx, http.MethodGet, b.target.collectionPath()+"?limit=1", nil, &list)
	if !o.ok() {
		return "", fmt.Errorf("listing %s: %s: %s", b.target.collectionPath(), o.errorKey(), o.message())
	}
	return list.Metadata.ResourceVersion, nil
}

// maxWrites is how many writes the writer may make: --count, or what --rate allows in --duration.
func (b *bench) maxWrites() int {
	if b.opts.count > 0 {
		return b.opts.count
	}
	return int(b.opts.rate*b.opts.duration.Seconds()) + 1
}

// startWatchers opens the watches and waits (at most setupTimeout) until the server has accepted
// them, so that connecting is not counted as delivery latency.
func (b *bench) startWatchers(ctx context.Context, acks *ackTable, startRV string) ([]*watcher, *sync.WaitGroup) {
	watchers := make([]*watcher, b.opts.watchers)
	var running, opened sync.WaitGroup
	for i := range watchers {
		w := &watcher{b: b, acks: acks, resourceVersion: startRV, rec: newRecorder()}
		watchers[i] = w
		opened.Add(1)
		running.Go(func() { w.run(ctx, opened.Done) })
	}
	allOpened := make(chan struct{})
	go func() { opened.Wait(); close(allOpened) }()
	select {
	case <-allOpened:
	case <-time.After(setupTimeout):
		fmt.Fprintf(b.stderr, "some watches not open after %s; starting anyway\n", setupTimeout)
	case <-ctx.Done():
	}
	return watchers, &running
}

// firstWatchError describes why the first refused watch was refused.
func firstWatchError(watchers []*watcher) string {
	for code, msg := range watchers[0].rec.errorSamples {
		return code + ": " + msg
	}
	return "no reason given"
}

func connectedCount(watchers []*watcher) int {
	n := 0
	for _, w := range watchers {
		if w.connected.Load() {
			n++
		}
	}
	return n
}

// writeAtRate creates objects at --rate, one at a time, until the run ends or maxWrites is
// reached, and records each write's latency and outcome.
func (b *bench) writeAtRate(ctx context.Context, acks *ackTable) *recorder {
	ctx, cancel := b.runContext(ctx)
	defer cancel()
	rec := newRecorder()
	tick := time.NewTicker(time.Duration(float64(time.Second) / b.opts.rate))
	defer tick.Stop()
	for i := range acks.size() {
		start := time.Now()
		o := b.call(ctx, http.MethodPost, b.target.collectionPath(), b.target.body(b.watchObjectName(i), "", 0), nil)
		if ctx.Err() != nil {
			break
		}
		if o.ok() {
			acks.ack(i)
		} else {
			b.counters.failed.Add(1)
		}
		rec.observe(time.Since(start), o)
		select {
		case <-ctx.Done():
			return rec
		case <-tick.C:
		}
	}
	return rec
}

func (b *bench) watchObjectName(i int) string { return b.watchNamePrefix() + strconv.Itoa(i) }

func (b *bench) watchNamePrefix() string { return "bench-" + b.runID + "-watch-" }

// awaitDelivery waits until the watchers have received the expected events, or --drain-timeout.
// It polls: the count it waits for only settles once the writer has stopped.
func (b *bench) awaitDelivery(ctx context.Context, expected func() int64) {
	ctx, cancel := context.WithTimeout(ctx, b.opts.drainTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for b.counters.done.Load() < expected() {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// ackTable holds when each write was acknowledged, as an offset from the table's creation (so
// that the monotonic clock is used); 0 means not yet.
type ackTable struct {
	base  time.Time
	at    []atomic.Int64
	acked atomic.Int64
}

func newAckTable(n int) *ackTable { return &ackTable{base: time.Now(), at: make([]atomic.Int64, n)} }

func (t *ackTable) size() int { return len(t.at) }

func (t *ackTable) count() int64 { return t.acked.Load() }

func (t *ackTable) ack(i int) {
	t.at[i].Store(int64(time.Since(t.base)) + 1)
	t.acked.Add(1)
}

// deliveryLatency is the time from write i's acknowledgement until now; zero when the write has
// not been acknowledged yet, as the event then arrived first.
func (t *ackTable) deliveryLatency(i int) time.Duration {
	at := t.at[i].Load()
	if at == 0 {
		return 0
	}
	return max(time.Since(t.base)-time.Duration(at-1), 0)
}

// watcher is one watch on the collection, resumed from the last resourceVersion it saw if the
// server ends it.
type watcher struct {
	b               *bench
	acks            *ackTable
	resourceVersion string
	rec             *recorder // delivery latencies and watch errors
	received        int64     // events for the run's objects; read after run returns
	connected       atomic.Bool
}

// watchEvent is the part of a watch event the tool reads. Object is a Status for ERROR events.
type watchEvent struct {
	Type   string `json:"type"`
	Object struct {
		Metadata objectMeta `json:"metadata"`
		Code     int        `json:"code"`
		Message  string     `json:"message"`
	} `json:"object"`
}

// run watches until ctx ends or the server refuses; opened is called once the first watch is
// accepted or refused.
func (w *watcher) run(ctx context.Context, opened func()) {
	stream, o := w.open(ctx)
	w.connected.Store(o.ok())
	opened()
	for o.ok() {
		o = w.consume(stream)
		stream.Close()
		if !o.ok() || ctx.Err() != nil {
			break
		}
		stream, o = w.open(ctx)
	}
	if ctx.Err() == nil && !o.ok() {
		w.rec.observe(0, o)
		w.b.counters.failed.Add(1)
	}
}

func (w *watcher) open(ctx context.Context) (io.ReadCloser, outcome) {
	query := url.Values{
		"watch":               {"1"},
		"allowWatchBookmarks": {"true"},
		"resourceVersion":     {w.resourceVersion},
		"timeoutSeconds":      {"3600"},
	}
	body, code, detail, err := w.b.client.stream(ctx, w.b.target.collectionPath()+"?"+query.Encode())
	return body, outcome{code: code, detail: detail, err: err}
}

// consume reads events until the stream ends: cleanly (an ok outcome, to resume) or with an
// ERROR event or a broken connection.
func (w *watcher) consume(stream io.Reader) outcome {
	dec := json.NewDecoder(stream)
	prefix := w.b.watchNamePrefix()
	for {
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) {
				return outcome{code: http.StatusOK}
			}
			return outcome{err: err}
		}
		if ev.Type == "ERROR" {
			return outcome{code: ev.Object.Code, detail: ev.Object.Message}
		}
		w.resourceVersion = ev.Object.Metadata.ResourceVersion
		if ev.Type != "ADDED" || !strings.HasPrefix(ev.Object.Metadata.Name, prefix) {
			continue
		}
		if i, err := strconv.Atoi(ev.Object.Metadata.Name[len(prefix):]); err == nil && i < w.acks.size() {
			w.rec.latency.record(w.acks.deliveryLatency(i))
			w.received++
			w.b.counters.done.Add(1)
		}
	}
}
