package auditlog

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recordingWriter keeps what is written to it and counts the writes; it fails while err is set.
type recordingWriter struct {
	busy   atomic.Bool // a write is under way: two at once would be groupWriter's bug
	mu     sync.Mutex
	out    bytes.Buffer
	writes int
	err    error
}

func (r *recordingWriter) Write(p []byte) (int, error) {
	if !r.busy.CompareAndSwap(false, true) {
		panic("two writes at once")
	}
	defer r.busy.Store(false)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes++
	if r.err != nil {
		return 0, r.err
	}
	return r.out.Write(p)
}

func (r *recordingWriter) contains(line string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Contains(r.out.String(), line)
}

// TestGroupWriterWritesEveryLineOnceBeforeReturning writes from many goroutines at once: every
// line is in the output, whole and once, by the time its Write returns.
func TestGroupWriterWritesEveryLineOnceBeforeReturning(t *testing.T) {
	out := &recordingWriter{}
	w := newGroupWriter(out)
	const goroutines, lines = 32, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range lines {
				line := fmt.Sprintf("{\"goroutine\":%d,\"line\":%d}\n", g, i)
				if n, err := w.Write([]byte(line)); n != len(line) || err != nil {
					t.Errorf("Write = %d, %v", n, err)
				}
				if !out.contains(line) {
					t.Errorf("Write returned before %q was written", line)
				}
			}
		})
	}
	wg.Wait()
	written := strings.Split(strings.TrimSuffix(out.out.String(), "\n"), "\n")
	if len(written) != goroutines*lines {
		t.Fatalf("%d lines written, want %d", len(written), goroutines*lines)
	}
	seen := map[string]bool{}
	for _, line := range written {
		if seen[line] {
			t.Fatalf("%q written twice", line)
		}
		seen[line] = true
	}
	t.Logf("%d lines in %d writes", len(written), out.writes)
}

// TestGroupWriterReportsFailure gives every line of a failed write its error.
func TestGroupWriterReportsFailure(t *testing.T) {
	out := &recordingWriter{err: errors.New("disk full")}
	w := newGroupWriter(out)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if n, err := w.Write([]byte("line\n")); n != 0 || err == nil || err.Error() != "disk full" {
				t.Errorf("Write = %d, %v; want 0, disk full", n, err)
			}
		})
	}
	wg.Wait()
	out.err = nil
	if n, err := w.Write([]byte("after\n")); n != 6 || err != nil || out.out.String() != "after\n" {
		t.Errorf("after the failure: Write = %d, %v, output %q", n, err, out.out.String())
	}
}

// gateWriter's writes wait for gate to be closed.
type gateWriter struct {
	gate chan struct{}
}

func (g gateWriter) Write(p []byte) (int, error) {
	<-g.gate
	return len(p), nil
}

// TestGroupWriterYieldsOnlyWhenNotAlone: a writer alone for aloneBeforeNoYield groups stops
// yielding, and one group of several lines starts it again.
func TestGroupWriterYieldsOnlyWhenNotAlone(t *testing.T) {
	gate := make(chan struct{})
	close(gate)
	w := newGroupWriter(gateWriter{gate})
	for range aloneBeforeNoYield + 2 {
		if _, err := w.Write([]byte("alone\n")); err != nil {
			t.Fatal(err)
		}
	}
	if w.alone != aloneBeforeNoYield {
		t.Fatalf("after single lines alone = %d, want %d", w.alone, aloneBeforeNoYield)
	}

	// A write that waits lets two more lines meet in the next group.
	w.out = gateWriter{make(chan struct{})}
	var wg sync.WaitGroup
	wg.Go(func() { w.Write([]byte("first\n")) })
	waitFor(t, w, func() bool { return w.writing })
	wg.Go(func() { w.Write([]byte("second\n")) })
	wg.Go(func() { w.Write([]byte("third\n")) })
	waitFor(t, w, func() bool { return w.next != nil && w.next.count == 2 })
	close(w.out.(gateWriter).gate)
	wg.Wait()
	if w.alone != 0 {
		t.Errorf("after a group of two lines alone = %d, want 0", w.alone)
	}
}

// waitFor waits until cond, read under w's lock, holds.
func waitFor(t *testing.T, w *groupWriter, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		ok := cond()
		w.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		runtime.Gosched()
	}
}
