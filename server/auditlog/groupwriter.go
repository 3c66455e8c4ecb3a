package auditlog

import (
	"io"
	"runtime"
	"sync"
)

// groupWriter writes lines from many goroutines in as few writes as it can, as a database
// commits a group of transactions: the lines that arrive while a write is under way wait and
// go together in the next one. Each Write still returns only once its line is written (or the
// write failed), so the log's blocking mode keeps its promise: an event is in the file before
// the request goes on. On a busy server the write system call per event was as costly as
// encoding the event (docs/benchmarks.md).
type groupWriter struct {
	out io.Writer

	mu       sync.Mutex
	writing  bool      // a write to out is under way
	idle     sync.Cond // signalled when a write ends; on mu
	next     *group    // the lines waiting for the write under way to end, or nil
	recycled *group    // a written group's buffer, for the next group
	alone    int       // groups of a single line written in a row
}

// group is lines written to out in one write; done is closed once they are.
type group struct {
	lines []byte
	count int // lines in lines
	done  chan struct{}
	err   error
}

func newGroupWriter(out io.Writer) *groupWriter {
	w := &groupWriter{out: out}
	w.idle.L = &w.mu
	return w
}

// Write writes line, whole, with the lines other goroutines are writing at the same time.
func (w *groupWriter) Write(line []byte) (int, error) {
	w.mu.Lock()
	g, leader := w.next, false
	if g == nil {
		// The first line of a group writes the group, once the write before it has ended.
		g, leader = w.newGroup(), true
		w.next = g
	}
	g.lines = append(g.lines, line...)
	g.count++
	if !leader {
		w.mu.Unlock()
		<-g.done
		return written(g, line)
	}
	if !w.writing && w.alone < aloneBeforeNoYield {
		// Nothing to wait for, and others have been writing: yield once first, so that the
		// lines of goroutines already runnable join this group instead of each paying for a
		// write of its own (8-11 lines per write instead of 1.3 on a busy server,
		// docs/benchmarks.md). A writer that has long been alone (one client) does not yield:
		// it would only add a scheduling round to each request.
		w.mu.Unlock()
		runtime.Gosched()
		w.mu.Lock()
	}
	for w.writing {
		w.idle.Wait()
	}
	w.next, w.writing = nil, true
	if g.count > 1 {
		w.alone = 0
	} else if w.alone < aloneBeforeNoYield {
		w.alone++
	}
	w.mu.Unlock()

	_, g.err = w.out.Write(g.lines)
	close(g.done)

	w.mu.Lock()
	w.writing = false
	w.idle.Signal() // only the next group's leader can be waiting
	if cap(g.lines) <= maxRecycledGroup {
		w.recycled = g
	}
	w.mu.Unlock()
	return written(g, line)
}

// aloneBeforeNoYield is how many single-line groups in a row end the yielding: on a busy server a
// group of one line despite the yield is common, eight in a row are not.
const aloneBeforeNoYield = 8

// maxRecycledGroup bounds the buffer kept for the next group after a burst of large events.
const maxRecycledGroup = 1 << 20

// newGroup starts a group in the buffer of the last one written, when no line still reads it:
// its waiters only read its err, which the new group does not share.
func (w *groupWriter) newGroup() *group {
	g := &group{done: make(chan struct{})}
	if w.recycled != nil {
		g.lines, w.recycled = w.recycled.lines[:0], nil
	}
	return g
}

// written is what Write returns for line, written in g.
func written(g *group, line []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	return len(line), nil
}
