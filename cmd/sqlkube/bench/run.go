package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// bench is one run against one target.
type bench struct {
	opts     options
	client   *apiClient
	target   target
	runID    string // in every name the run creates, so that runs never collide
	set      workingSet
	counters counters
	stderr   io.Writer // progress lines
}

// workingSet is the objects created before an update, get, list or mixed run. Client id owns the
// indexes id, id+concurrency, ...: only it updates them, so their resourceVersions need no lock
// and updates never conflict.
type workingSet struct {
	names    []string
	versions []string
}

// opFunc performs one operation and names it (mixed runs several kinds).
type opFunc func(ctx context.Context) (op string, o outcome)

// call sends one request and folds its result into an outcome.
func (b *bench) call(ctx context.Context, method, path string, body []byte, into any) outcome {
	code, detail, err := b.client.send(ctx, method, path, body, into)
	return outcome{code: code, detail: detail, err: err}
}

// prepareWorkingSet creates --objects objects with all clients, unmeasured.
func (b *bench) prepareWorkingSet(ctx context.Context) error {
	n, clients := b.opts.objects, b.opts.concurrency
	fmt.Fprintf(b.stderr, "preparing %d objects\n", n)
	b.set = workingSet{names: make([]string, n), versions: make([]string, n)}
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for id := range clients {
		wg.Go(func() { errs[id] = b.prepareOwned(ctx, id) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// prepareOwned creates the working-set objects client id owns.
func (b *bench) prepareOwned(ctx context.Context, id int) error {
	var resp bytes.Buffer
	for i := id; i < len(b.set.names); i += b.opts.concurrency {
		name := fmt.Sprintf("bench-%s-obj-%d", b.runID, i)
		o, rv := b.write(ctx, http.MethodPost, b.target.collectionPath(), b.target.body.render(name, "", 0), &resp)
		if !o.ok() {
			return fmt.Errorf("creating %s: %s: %s", name, o.errorKey(), o.message())
		}
		b.set.names[i], b.set.versions[i] = name, rv
	}
	return nil
}

// write sends a create or update and returns the resourceVersion of the object written, read
// through resp.
func (b *bench) write(ctx context.Context, method, path string, body []byte, resp *bytes.Buffer) (outcome, string) {
	o := b.call(ctx, method, path, body, resp)
	if !o.ok() {
		return o, ""
	}
	var rv string
	rv, o.err = metadataString(resp.Bytes(), "resourceVersion")
	return o, rv
}

// runOps measures create, update, get, list or mixed.
func (b *bench) runOps(ctx context.Context) (report, error) {
	if b.opts.needsWorkingSet() {
		if err := b.prepareWorkingSet(ctx); err != nil {
			return report{}, err
		}
	}
	return b.measureOps(ctx)
}

// measureOps runs the measured part of create, update, get, list or mixed.
func (b *bench) measureOps(ctx context.Context) (report, error) {
	cpuBefore, err := b.serverCPU()
	if err != nil {
		return report{}, err
	}
	recs, elapsed := b.drive(ctx, func(id int) opFunc { return b.newWorker(id).opFunc(b.opts.op) })
	cpuAfter, err := b.serverCPU()
	if err != nil {
		return report{}, err
	}
	rep := b.newReport(recs, elapsed)
	if b.opts.op == opMixed {
		rep.ByOp = summarizeByOp(recs, elapsed)
	}
	b.setServerCPU(&rep, cpuAfter-cpuBefore)
	return rep, nil
}

// drive runs --concurrency clients, each doing one operation at a time, for --duration or until
// --count operations were made, and returns what they recorded and how long they ran.
//
// Operations in flight when --duration ends are not recorded, but they are not abandoned
// either: each client waits for its answer (ctx still bounds it), so that once drive returns the
// server has finished every write the run made, and deleting the run's objects misses none.
func (b *bench) drive(ctx context.Context, newOp func(id int) opFunc) (recorders, time.Duration) {
	start := time.Now()
	runCtx, cancel := b.runContext(ctx)
	defer cancel()
	budget := newBudget(b.opts.count)
	stopProgress := b.startProgress(runCtx, start, "ops")
	perClient := make([]recorders, b.opts.concurrency)
	var wg sync.WaitGroup
	for id := range perClient {
		op := newOp(id)
		wg.Go(func() { perClient[id] = b.loop(runCtx, ctx, op, budget) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	if deadline, ok := runCtx.Deadline(); ok && deadline.Before(start.Add(elapsed)) {
		elapsed = deadline.Sub(start) // what finished later was not recorded
	}
	stopProgress()
	all := recorders{}
	for _, r := range perClient {
		all.merge(r)
	}
	return all, elapsed
}

// runContext ends at --duration, unless the run is bounded by --count.
func (b *bench) runContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if b.opts.count > 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, b.opts.duration)
}

// loop is one client: it repeats op, with opCtx, until the run ends with runCtx.
func (b *bench) loop(runCtx, opCtx context.Context, op opFunc, budget *budget) recorders {
	recs := recorders{}
	for runCtx.Err() == nil && budget.take() {
		start := time.Now()
		name, o := op(opCtx)
		if runCtx.Err() != nil {
			break // finished after the end of the run: neither a success nor an error
		}
		recs.get(name).observe(time.Since(start), o)
		b.counters.add(o)
	}
	return recs
}

// budget hands out at most n operations across clients; n == 0 is unlimited.
type budget struct {
	limited bool
	left    atomic.Int64
}

func newBudget(n int) *budget {
	b := &budget{limited: n > 0}
	b.left.Store(int64(n))
	return b
}

func (b *budget) take() bool { return !b.limited || b.left.Add(-1) >= 0 }

// startProgress writes a line to stderr every second until ctx ends or the returned stop is called.
func (b *bench) startProgress(ctx context.Context, start time.Time, unit string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		var lastDone int64
		lastAt := start
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				total := b.counters.done.Load()
				rate := float64(total-lastDone) / now.Sub(lastAt).Seconds()
				fmt.Fprintf(b.stderr, "%4.0fs  %d %s  %.0f %s/s  %d errors\n",
					now.Sub(start).Seconds(), total, unit, rate, unit, b.counters.failed.Load())
				lastDone, lastAt = total, now
			}
		}
	}()
	return func() { cancel(); <-done }
}

// worker is one client's state.
type worker struct {
	b            *bench
	id           int
	seq          int          // numbers the objects it creates and the contents of its updates
	next         int          // the next working-set index it updates
	namePrefix   string       // of the objects it creates
	listContinue string       // where its walk through the collection's pages stands
	resp         bytes.Buffer // the last response read (a list page, an object updated), reused
}

func (b *bench) newWorker(id int) *worker {
	return &worker{b: b, id: id, next: id, namePrefix: fmt.Sprintf("bench-%s-%d-", b.runID, id)}
}

func (w *worker) opFunc(op string) opFunc {
	if op == opMixed {
		return w.mixed
	}
	do := map[string]func(context.Context) outcome{
		opCreate: w.create, opUpdate: w.update, opGet: w.get, opList: w.list,
	}[op]
	return func(ctx context.Context) (string, outcome) { return op, do(ctx) }
}

func (w *worker) create(ctx context.Context) outcome {
	w.seq++
	name := w.namePrefix + strconv.Itoa(w.seq)
	return w.b.call(ctx, http.MethodPost, w.b.target.collectionPath(), w.b.target.body.render(name, "", 0), nil)
}

// update replaces the next object the client owns, with the resourceVersion it last saw, so that
// it works for custom resources too (which refuse unconditional updates).
func (w *worker) update(ctx context.Context) outcome {
	set, i := &w.b.set, w.next
	w.next += w.b.opts.concurrency
	if w.next >= len(set.names) {
		w.next = w.id
	}
	w.seq++
	body := w.b.target.body.render(set.names[i], set.versions[i], w.seq)
	o, rv := w.b.write(ctx, http.MethodPut, w.b.target.objectPath(set.names[i]), body, &w.resp)
	if o.ok() {
		set.versions[i] = rv
	}
	return o
}

func (w *worker) get(ctx context.Context) outcome {
	name := w.b.set.names[rand.IntN(len(w.b.set.names))]
	return w.b.call(ctx, http.MethodGet, w.b.target.objectPath(name), nil, nil)
}

// list reads the next page of the collection, starting over after the last one.
func (w *worker) list(ctx context.Context) outcome {
	query := url.Values{"limit": {strconv.Itoa(w.b.opts.pageSize)}}
	if w.listContinue != "" {
		query.Set("continue", w.listContinue)
	}
	o := w.b.call(ctx, http.MethodGet, w.b.target.collectionPath()+"?"+query.Encode(), nil, &w.resp)
	w.listContinue = "" // after the last page or a failure: start over
	if o.ok() {
		w.listContinue, o.err = metadataString(w.resp.Bytes(), "continue")
	}
	return o
}

// mixed picks an operation at random: half gets, a quarter updates, 15% creates, 10% list pages.
func (w *worker) mixed(ctx context.Context) (string, outcome) {
	switch r := rand.IntN(100); {
	case r < 50:
		return opGet, w.get(ctx)
	case r < 75:
		return opUpdate, w.update(ctx)
	case r < 90:
		return opCreate, w.create(ctx)
	default:
		return opList, w.list(ctx)
	}
}
