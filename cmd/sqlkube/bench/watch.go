package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

// watchSummary is the watch fan-out part of a report.
type watchSummary struct {
	Watchers  int `json:"watchers"`
	Connected int `json:"connected"` // watchers whose watch the server accepted
	// Connections is how many the tool opened (--idle reports it: watches share them).
	Connections    int64     `json:"connections,omitempty"`
	Rate           float64   `json:"rate"`   // writes per second asked for
	Writes         opSummary `json:"writes"` // the writer's creates
	EventsExpected int64     `json:"eventsExpected"`
	EventsReceived int64     `json:"eventsReceived"`
	EventsLost     int64     `json:"eventsLost"`
	// SendToEventMs is delivery latency measured from the start of the write request instead of
	// its acknowledgement: what a change takes to reach watchers end to end.
	SendToEventMs latencySummary `json:"sendToEventMs"`
}

// runWatch measures watch fan-out: --watchers watches on the collection, and one writer creating
// objects at --rate. Each watcher records, for every object it sees created, the time from the
// writer's acknowledgement to the event's arrival (zero when the event beats the acknowledgement),
// and from the start of the write request. Write times stay in this process, keyed by the index in
// the object's name, so that no clock is compared across machines.
func (b *bench) runWatch(ctx context.Context) (report, error) {
	startRV, err := b.collectionRevision(ctx)
	if err != nil {
		return report{}, err
	}
	times := newWriteTimes(b.maxWrites())
	watchCtx, stopWatchers := context.WithCancel(ctx)
	defer stopWatchers()
	watchers, running := b.startWatchers(watchCtx, times, startRV)
	if connectedCount(watchers) == 0 {
		stopWatchers()
		running.Wait()
		return report{}, fmt.Errorf("the server accepted none of the watches: %s", firstWatchError(watchers))
	}

	cpuBefore, err := b.serverCPU()
	if err != nil {
		stopWatchers()
		running.Wait()
		return report{}, err
	}
	start := time.Now()
	stopProgress := b.startProgress(ctx, start, "events")
	writes := b.writeAtRate(ctx, times)
	expected := func() int64 { return times.acknowledged() * int64(connectedCount(watchers)) }
	b.awaitDelivery(ctx, expected)
	elapsed := time.Since(start)
	cpuAfter, cpuErr := b.serverCPU()
	stopWatchers()
	running.Wait()
	stopProgress()
	if cpuErr != nil {
		return report{}, cpuErr
	}

	delivery := recorders{}
	for _, w := range watchers {
		delivery.get(opWatch).merge(w.rec)
	}
	rep := b.newReport(delivery, elapsed)
	rep.addErrors(writes)
	rep.Watch = b.watchSummary(watchers, writes, elapsed, expected())
	b.setServerCPU(&rep, cpuAfter-cpuBefore)
	return rep, nil
}

func (b *bench) watchSummary(watchers []*watcher, writes *recorder, elapsed time.Duration, expected int64) *watchSummary {
	var received int64
	var fromSend histogram
	for _, w := range watchers {
		received += w.received
		fromSend.merge(&w.fromSend)
	}
	return &watchSummary{
		Watchers:       len(watchers),
		Connected:      connectedCount(watchers),
		Rate:           b.opts.rate,
		Writes:         summarize(writes, elapsed),
		EventsExpected: expected,
		EventsReceived: received,
		EventsLost:     max(expected-received, 0),
		SendToEventMs:  summarizeLatency(&fromSend),
	}
}

// collectionRevision is the resourceVersion of the collection now: watches start from it, so that
// none misses a write however long it takes to connect.
func (b *bench) collectionRevision(ctx context.Context) (string, error) {
	var list bytes.Buffer
	o := b.call(ctx, http.MethodGet, b.target.collectionPath()+"?limit=1", nil, &list)
	if o.ok() {
		var rv string
		if rv, o.err = metadataString(list.Bytes(), "resourceVersion"); o.err == nil {
			return rv, nil
		}
	}
	return "", fmt.Errorf("listing %s: %s: %s", b.target.collectionPath(), o.errorKey(), o.message())
}

// maxWrites is how many writes the writer may make: --count, or what --rate allows in --duration.
func (b *bench) maxWrites() int {
	if b.opts.count > 0 {
		return b.opts.count
	}
	return int(b.opts.rate*b.opts.duration.Seconds()) + 1
}

// startWatchers opens the watches and waits (at most openTimeout) until the server has accepted
// them, so that connecting is not counted as delivery latency.
func (b *bench) startWatchers(ctx context.Context, writes *writeTimes, startRV string) ([]*watcher, *sync.WaitGroup) {
	watchers := make([]*watcher, b.opts.watchers)
	var running, opened sync.WaitGroup
	for i := range watchers {
		w := &watcher{b: b, writes: writes, resourceVersion: []byte(startRV), rec: newRecorder()}
		watchers[i] = w
		opened.Add(1)
		running.Go(func() { w.run(ctx, opened.Done) })
	}
	b.awaitOpened(ctx, &opened)
	return watchers, &running
}

// awaitOpened waits until every watch started has been accepted or refused, for at most
// openTimeout.
func (b *bench) awaitOpened(ctx context.Context, opened *sync.WaitGroup) {
	allOpened := make(chan struct{})
	go func() { opened.Wait(); close(allOpened) }()
	select {
	case <-allOpened:
	case <-time.After(b.openTimeout()):
		fmt.Fprintf(b.stderr, "some watches not open after %s; going on\n", b.openTimeout())
	case <-ctx.Done():
	}
}

// openTimeout bounds how long the watches may take to open: setupTimeout, or for --idle, where
// opening them all is the point, ten times that.
func (b *bench) openTimeout() time.Duration {
	if b.opts.idle {
		return 10 * setupTimeout
	}
	return setupTimeout
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

// writeAtRate creates objects at --rate, until --duration ends or maxWrites were started. Writes
// start on schedule whether or not earlier ones have finished (up to --concurrency in flight),
// so a slow server shows as latency rather than as a lower rate. Writes in flight when the run
// ends are completed, so that every write's event is expected or its failure counted.
func (b *bench) writeAtRate(ctx context.Context, times *writeTimes) *recorder {
	schedule, cancel := b.runContext(ctx)
	defer cancel()
	var mu sync.Mutex // guards rec, shared by the writes in flight
	rec := newRecorder()
	inFlight := make(chan struct{}, b.opts.concurrency)
	var writing sync.WaitGroup
	tick := time.NewTicker(time.Duration(float64(time.Second) / b.opts.rate))
	defer tick.Stop()
	for i := range times.size() {
		select {
		case inFlight <- struct{}{}:
		case <-schedule.Done():
		}
		if schedule.Err() != nil {
			break
		}
		writing.Go(func() {
			defer func() { <-inFlight }()
			d, o := b.writeOne(ctx, times, i)
			mu.Lock()
			rec.observe(d, o)
			mu.Unlock()
		})
		select {
		case <-tick.C:
		case <-schedule.Done():
		}
	}
	writing.Wait()
	return rec
}

// writeOne creates watch object i and notes when it was sent and acknowledged.
func (b *bench) writeOne(ctx context.Context, times *writeTimes, i int) (time.Duration, outcome) {
	start := time.Now()
	times.markSent(i)
	o := b.call(ctx, http.MethodPost, b.target.collectionPath(), b.target.body.render(b.watchObjectName(i), "", 0), nil)
	if o.ok() {
		times.markAcked(i)
	} else {
		b.counters.failed.Add(1)
	}
	return time.Since(start), o
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

// writeTimes holds when each write was sent and when it was acknowledged, as offsets from the
// table's creation (so that the monotonic clock is used); 0 means not yet.
type writeTimes struct {
	base  time.Time
	sent  []atomic.Int64
	acked []atomic.Int64
	count atomic.Int64 // writes acknowledged
}

func newWriteTimes(n int) *writeTimes {
	return &writeTimes{base: time.Now(), sent: make([]atomic.Int64, n), acked: make([]atomic.Int64, n)}
}

func (t *writeTimes) size() int { return len(t.sent) }

func (t *writeTimes) acknowledged() int64 { return t.count.Load() }

func (t *writeTimes) now() int64 { return int64(time.Since(t.base)) + 1 }

func (t *writeTimes) markSent(i int) { t.sent[i].Store(t.now()) }

func (t *writeTimes) markAcked(i int) {
	t.acked[i].Store(t.now())
	t.count.Add(1)
}

// delivered is how long ago write i was acknowledged (zero when it has not been yet, as its
// event then arrived first) and how long ago its request started, read from one clock reading.
func (t *writeTimes) delivered(i int) (fromAck, fromSend time.Duration) {
	now := t.now()
	since := func(at int64) time.Duration {
		if at == 0 {
			return 0
		}
		return max(time.Duration(now-at), 0)
	}
	return since(t.acked[i].Load()), since(t.sent[i].Load())
}

// watcher is one watch on the collection, resumed from the last resourceVersion it saw if the
// server ends it.
type watcher struct {
	b               *bench
	writes          *writeTimes
	resourceVersion []byte    // the last one seen, to resume from
	rec             *recorder // delivery latencies (from the acknowledgement) and watch errors
	fromSend        histogram // delivery latencies from the start of the write request
	received        int64     // events for the run's objects; read after run returns
	connected       atomic.Bool
}

// watchEvent is the part of a watch event the tool reads. Type, Name and ResourceVersion are
// slices of the event's text (valid until the next event is read), so that skimming the events
// of a thousand watchers allocates nothing.
type watchEvent struct {
	Type, Name, ResourceVersion []byte
	// Code and Message are an ERROR event's Status.
	Code    int
	Message string
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
		"resourceVersion":     {string(w.resourceVersion)},
		"timeoutSeconds":      {"3600"},
	}
	path := w.b.target.collectionPath() + "?" + query.Encode()
	body, code, detail, err := w.b.client.stream(ctx, path)
	for retries := 0; retries < maxWatchRetries && ctx.Err() == nil; retries++ {
		delay, retry := openRetryDelay(code, err)
		if !retry {
			break
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
		}
		body, code, detail, err = w.b.client.stream(ctx, path)
	}
	return body, outcome{code: code, detail: detail, err: err}
}

// openRetryDelay says whether a watch refused with code or err is worth asking for again, and
// after how long.
func openRetryDelay(code int, err error) (time.Duration, bool) {
	var reset http2.StreamError
	switch {
	case errors.As(err, &reset) && (reset.Code == http2.ErrCodeRefusedStream || reset.Code == http2.ErrCodeProtocol):
		// A new HTTP/2 connection takes requests before the server's SETTINGS arrive, so a burst
		// of watches can open more streams than the server allows and have some reset (with
		// PROTOCOL_ERROR once the client has acknowledged the limit): the connection knows the
		// limit now, so ask again at once.
		return 0, true
	case code == http.StatusTooManyRequests:
		// Priority and fairness refuses watches beyond its queues while many start at once:
		// retry after a second, as client-go does with the server's Retry-After.
		return time.Second, true
	}
	return 0, false
}

// maxWatchRetries is client-go's limit of retries after a 429, used for refused streams too.
const maxWatchRetries = 10

// consume reads events until the stream ends: cleanly (an ok outcome, to resume) or with an
// ERROR event or a broken connection.
func (w *watcher) consume(stream io.Reader) outcome {
	events := newEventReader(stream)
	prefix := []byte(w.b.watchNamePrefix())
	for {
		ev, err := events.next()
		if errors.Is(err, io.EOF) {
			return outcome{code: http.StatusOK}
		}
		if err != nil {
			return outcome{err: err}
		}
		if string(ev.Type) == "ERROR" {
			return outcome{code: ev.Code, detail: ev.Message}
		}
		w.resourceVersion = append(w.resourceVersion[:0], ev.ResourceVersion...)
		if string(ev.Type) != "ADDED" || !bytes.HasPrefix(ev.Name, prefix) {
			continue
		}
		if i, err := strconv.Atoi(string(ev.Name[len(prefix):])); err == nil && i < w.writes.size() {
			fromAck, fromSend := w.writes.delivered(i)
			w.rec.latency.record(fromAck)
			w.fromSend.record(fromSend)
			w.received++
			w.b.counters.done.Add(1)
		}
	}
}
