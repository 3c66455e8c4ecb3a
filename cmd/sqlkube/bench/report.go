package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"
)

// report is the result of a run; its JSON form is what --output json prints.
type report struct {
	Op              string            `json:"op"`
	Resource        string            `json:"resource"`
	Namespace       string            `json:"namespace"`
	Concurrency     int               `json:"concurrency"`
	ObjectSize      int               `json:"objectSize"`
	DurationSeconds float64           `json:"durationSeconds"`
	Ops             int64             `json:"ops"` // successful operations (events received for watch)
	OpsPerSecond    float64           `json:"opsPerSecond"`
	Errors          int64             `json:"errors"`
	ErrorsByCode    map[string]int64  `json:"errorsByCode"`
	ErrorSamples    map[string]string `json:"errorSamples,omitempty"` // first message per code
	LatencyMs       latencySummary    `json:"latencyMs"`
	// ServerCPUMicrosPerOp is the CPU time of the --server-pid processes over the measured part,
	// per successful operation (absent without --server-pid).
	ServerCPUMicrosPerOp *float64 `json:"serverCPUMicrosPerOp,omitempty"`
	// ByOp breaks a mixed run down by operation.
	ByOp  map[string]opSummary `json:"byOp,omitempty"`
	Watch *watchSummary        `json:"watch,omitempty"`
}

type latencySummary struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

type opSummary struct {
	Ops          int64            `json:"ops"`
	OpsPerSecond float64          `json:"opsPerSecond"`
	Errors       int64            `json:"errors"`
	ErrorsByCode map[string]int64 `json:"errorsByCode"`
	LatencyMs    latencySummary   `json:"latencyMs"`
}

func summarizeLatency(h *histogram) latencySummary {
	return latencySummary{
		P50:  millis(h.quantile(0.50)),
		P90:  millis(h.quantile(0.90)),
		P99:  millis(h.quantile(0.99)),
		Max:  millis(h.maximum()),
		Mean: millis(h.mean()),
	}
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func summarize(r *recorder, elapsed time.Duration) opSummary {
	ops := int64(r.latency.total)
	return opSummary{
		Ops:          ops,
		OpsPerSecond: perSecond(ops, elapsed),
		Errors:       r.errorCount(),
		ErrorsByCode: r.errors,
		LatencyMs:    summarizeLatency(&r.latency),
	}
}

func perSecond(n int64, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(n) / elapsed.Seconds()
}

func summarizeByOp(recs recorders, elapsed time.Duration) map[string]opSummary {
	out := make(map[string]opSummary, len(recs))
	for op, r := range recs {
		out[op] = summarize(r, elapsed)
	}
	return out
}

// newReport summarizes every operation of the run together.
func (b *bench) newReport(recs recorders, elapsed time.Duration) report {
	total := recs.total()
	s := summarize(total, elapsed)
	return report{
		Op:              b.opts.op,
		Resource:        b.opts.resource.String(),
		Namespace:       b.opts.namespace,
		Concurrency:     b.opts.concurrency,
		ObjectSize:      b.opts.objectSize,
		DurationSeconds: elapsed.Seconds(),
		Ops:             s.Ops,
		OpsPerSecond:    s.OpsPerSecond,
		Errors:          s.Errors,
		ErrorsByCode:    s.ErrorsByCode,
		ErrorSamples:    total.errorSamples,
		LatencyMs:       s.LatencyMs,
	}
}

// addErrors counts the failures r recorded in the report too.
func (rep *report) addErrors(r *recorder) {
	rep.Errors += r.errorCount()
	for code, n := range r.errors {
		rep.ErrorsByCode[code] += n
	}
	for code, msg := range r.errorSamples {
		if _, seen := rep.ErrorSamples[code]; !seen {
			rep.ErrorSamples[code] = msg
		}
	}
}

func writeJSON(w io.Writer, rep report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// writeTable prints the report for people.
func writeTable(w io.Writer, rep report) error {
	clients := fmt.Sprintf("%d clients", rep.Concurrency)
	switch {
	case rep.Watch != nil && rep.Watch.Rate == 0: // --idle
		clients = fmt.Sprintf("%d idle watches over %d connections", rep.Watch.Watchers, rep.Watch.Connections)
	case rep.Watch != nil:
		clients = fmt.Sprintf("writes at %.0f/s (at most %d in flight), %d watchers", rep.Watch.Rate, rep.Concurrency, rep.Watch.Watchers)
	}
	fmt.Fprintf(w, "%s %s in namespace %s: %s, %d-byte objects, %.1fs\n\n",
		rep.Op, rep.Resource, rep.Namespace, clients, rep.ObjectSize, rep.DurationSeconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tops\tops/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\terrors\t")
	row := func(name string, s opSummary) {
		l := s.LatencyMs
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t\n", name, s.Ops, s.OpsPerSecond, l.P50, l.P90, l.P99, l.Max, s.Errors)
	}
	for _, op := range slices.Sorted(maps.Keys(rep.ByOp)) {
		row(op, rep.ByOp[op])
	}
	if rep.Watch != nil {
		row("write", rep.Watch.Writes)
	}
	row(totalRowName(rep), opSummary{Ops: rep.Ops, OpsPerSecond: rep.OpsPerSecond, Errors: rep.Errors, LatencyMs: rep.LatencyMs})
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.Watch != nil {
		ws := rep.Watch
		fmt.Fprintf(w, "\nwatch: %d of %d watchers connected; events expected %d, received %d, lost %d\n",
			ws.Connected, ws.Watchers, ws.EventsExpected, ws.EventsReceived, ws.EventsLost)
		l := ws.SendToEventMs
		fmt.Fprintf(w, "delivery measured from the write's start instead of its acknowledgement: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms\n",
			l.P50, l.P90, l.P99, l.Max)
	}
	if rep.ServerCPUMicrosPerOp != nil {
		fmt.Fprintf(w, "\nserver CPU: %.0f µs per %s\n", *rep.ServerCPUMicrosPerOp, rep.Op)
	}
	if rep.Errors > 0 {
		fmt.Fprintln(w, "\nerrors by status:")
		for _, code := range slices.Sorted(maps.Keys(rep.ErrorsByCode)) {
			fmt.Fprintf(w, "  %s: %d (%s)\n", code, rep.ErrorsByCode[code], rep.ErrorSamples[code])
		}
	}
	return nil
}

// totalRowName labels the summary row: the op itself, "all" for mixed, "delivery" for watch.
func totalRowName(rep report) string {
	switch {
	case rep.Op == opMixed:
		return "all"
	case rep.Watch != nil:
		return "delivery"
	}
	return rep.Op
}
