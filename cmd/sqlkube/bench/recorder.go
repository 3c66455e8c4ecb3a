package bench

import (
	"strconv"
	"sync/atomic"
	"time"
)

// outcome is what one request came to.
type outcome struct {
	code   int    // HTTP status; 0 when no response arrived
	detail string // server's message for a non-2xx status
	err    error  // transport or decode failure
}

func (o outcome) ok() bool { return o.err == nil && isSuccess(o.code) }

// errorKey groups failures in the report: the HTTP status code, "network" when no response
// arrived, or "decode" when a 2xx response could not be read.
func (o outcome) errorKey() string {
	switch {
	case o.code == 0:
		return "network"
	case o.err != nil:
		return "decode"
	}
	return strconv.Itoa(o.code)
}

func (o outcome) message() string {
	if o.err != nil {
		return o.err.Error()
	}
	return o.detail
}

// recorder accumulates the results of one kind of operation. Each client has its own, merged at
// the end, so that recording takes no locks.
type recorder struct {
	latency      histogram // successful operations only
	errors       map[string]int64
	errorSamples map[string]string // the first message seen for each error key
}

func newRecorder() *recorder {
	return &recorder{errors: map[string]int64{}, errorSamples: map[string]string{}}
}

func (r *recorder) observe(d time.Duration, o outcome) {
	if o.ok() {
		r.latency.record(d)
		return
	}
	key := o.errorKey()
	r.errors[key]++
	if _, seen := r.errorSamples[key]; !seen {
		r.errorSamples[key] = truncate(o.message(), 200)
	}
}

func (r *recorder) merge(o *recorder) {
	r.latency.merge(&o.latency)
	for k, n := range o.errors {
		r.errors[k] += n
	}
	for k, m := range o.errorSamples {
		if _, seen := r.errorSamples[k]; !seen {
			r.errorSamples[k] = m
		}
	}
}

func (r *recorder) errorCount() int64 {
	var n int64
	for _, c := range r.errors {
		n += c
	}
	return n
}

// recorders holds one recorder per operation name (several for --op mixed).
type recorders map[string]*recorder

func (rs recorders) get(op string) *recorder {
	r, ok := rs[op]
	if !ok {
		r = newRecorder()
		rs[op] = r
	}
	return r
}

func (rs recorders) merge(o recorders) {
	for op, r := range o {
		rs.get(op).merge(r)
	}
}

// total merges every operation's recorder into one.
func (rs recorders) total() *recorder {
	t := newRecorder()
	for _, r := range rs {
		t.merge(r)
	}
	return t
}

// counters are the running totals the progress line shows, shared by all clients.
type counters struct {
	done   atomic.Int64
	failed atomic.Int64
}

func (c *counters) add(o outcome) {
	if o.ok() {
		c.done.Add(1)
	} else {
		c.failed.Add(1)
	}
}
