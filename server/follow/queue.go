package follow

import (
	"context"
	"sync"
	"time"
)

// Queue holds distinct pending items for one worker: an item added while queued is
// queued once, and one added while being processed is processed again afterwards, so no change
// is missed and none is handled twice at once.
type Queue[T comparable] struct {
	mu      sync.Mutex
	pending []T
	queued  map[T]bool
	wake    chan struct{}
}

func NewQueue[T comparable]() *Queue[T] {
	return &Queue[T]{queued: map[T]bool{}, wake: make(chan struct{}, 1)}
}

// Add queues item unless it is queued already.
func (q *Queue[T]) Add(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.queued[item] {
		return
	}
	q.queued[item] = true
	q.pending = append(q.pending, item)
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// AddAfter queues item once d has passed, unless ctx ended.
func (q *Queue[T]) AddAfter(ctx context.Context, item T, d time.Duration) {
	go func() {
		if Sleep(ctx, d) {
			q.Add(item)
		}
	}()
}

// Next waits for an item; false once ctx ended.
func (q *Queue[T]) Next(ctx context.Context) (T, bool) {
	for {
		q.mu.Lock()
		if len(q.pending) > 0 {
			item := q.pending[0]
			q.pending = q.pending[1:]
			delete(q.queued, item)
			q.mu.Unlock()
			return item, true
		}
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			var zero T
			return zero, false
		case <-q.wake:
		}
	}
}
