package sqlstore

import (
	"sync"
	"sync/atomic"
	"testing"
)

// MemoKeyed computes once per key, however many ask at once, and keeps keys apart.
func TestEventMemoKeyed(t *testing.T) {
	var ev Event
	var calls [2]atomic.Int32
	var wg sync.WaitGroup
	for i := range 100 {
		key := i % 2
		wg.Go(func() {
			got := ev.MemoKeyed(key, func() any { calls[key].Add(1); return key * 10 })
			if got != key*10 {
				t.Errorf("key %d: %v", key, got)
			}
		})
	}
	wg.Wait()
	if calls[0].Load() != 1 || calls[1].Load() != 1 {
		t.Errorf("computed %d and %d times, want once per key", calls[0].Load(), calls[1].Load())
	}
}
