package auditlog

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
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
