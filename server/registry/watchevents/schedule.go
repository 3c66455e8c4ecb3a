package watchevents

import (
	"context"
	"time"
)

const (
	// DefaultBookmarkInterval is how often kube-apiserver's cacher sends a watch a bookmark.
	DefaultBookmarkInterval = time.Minute
	// bookmarkBeforeTimeout: the cacher also sends one this long before a watch's deadline, so
	// that the client resumes from a recent revision.
	bookmarkBeforeTimeout = 2 * time.Second
)

// Schedule times a watch's bookmarks as kube-apiserver's cacher does: every interval, and
// once more shortly before the watch's deadline.
type Schedule struct {
	timer    *time.Timer
	interval time.Duration
	deadline time.Time
}

// NewSchedule is the bookmarks of a watch that ends with ctx; none unless enabled (the client's
// allowWatchBookmarks).
func NewSchedule(ctx context.Context, enabled bool, interval time.Duration) *Schedule {
	b := &Schedule{interval: interval}
	if !enabled {
		return b
	}
	b.deadline, _ = ctx.Deadline()
	b.timer = time.NewTimer(time.Hour)
	b.Next()
	return b
}

// Next arms the timer for the next bookmark, if there is one before the deadline.
func (b *Schedule) Next() {
	now := time.Now()
	at := now.Add(b.interval)
	if !b.deadline.IsZero() {
		if last := b.deadline.Add(-bookmarkBeforeTimeout); last.Before(at) {
			at = last
		}
	}
	if at.Before(now) {
		b.Stop()
		return
	}
	b.timer.Reset(at.Sub(now))
}

// C is the channel the next bookmark is due on; nil (never ready) without bookmarks.
func (b *Schedule) C() <-chan time.Time {
	if b.timer == nil {
		return nil
	}
	return b.timer.C
}

// Stop ends the bookmarks.
func (b *Schedule) Stop() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
}
