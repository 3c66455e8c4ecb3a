package sqlstore

import (
	"context"
	"database/sql"
	"time"
)

// Observer is told what the store does as it does it, for metrics: the server turns these calls
// into Prometheus metrics, so the store stays free of any metrics library. Its methods are
// called on the committer's and the change feed's paths: they must be cheap and never block.
type Observer interface {
	// Committed: a batch of writes committed in one transaction that took took.
	Committed(writes int, took time.Duration)
	// Published: events this process committed reached the watchers lag after the committer
	// handed them to the change feed.
	Published(events int, lag time.Duration)
	// Woken: the change feed read the log because a PostgreSQL NOTIFY arrived ("notify") or its
	// poll interval passed ("poll").
	Woken(reason string)
	// CaughtUp: the change feed read events from the log rather than from the committer: writes
	// of other replicas, or events whose previous state had left the window.
	CaughtUp(events int)
	// Compacted: a compaction run removed rows log rows in took.
	Compacted(rows int64, took time.Duration)
	// Checkpointed: a background checkpoint (SQLite's WAL) took took.
	Checkpointed(took time.Duration)
}

// Stats is the store's state at one moment, for metrics.
type Stats struct {
	// CurrentRevision and CompactedRevision are the database's; PublishedRevision is the newest
	// revision the change feed has published to watchers.
	CurrentRevision, CompactedRevision, PublishedRevision int64
	// WindowEvents and WindowBytes measure the window of recent events kept for watches to
	// resume from; Watchers counts the watchers attached or catching up.
	WindowEvents, WindowBytes, Watchers int
	// Writer and Reader are the connection pools of writes and reads (the same pool on
	// PostgreSQL).
	Writer, Reader sql.DBStats
	// WALBytes is the length of SQLite's write-ahead log at the last checkpoint; 0 on PostgreSQL.
	WALBytes int64
}

// Stats reads the store's state; only the revisions need the database.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	current, compacted, err := s.readMeta(ctx, nil)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{
		CurrentRevision: current, CompactedRevision: compacted, PublishedRevision: s.feed.last.Load(),
		Writer: s.db.Writer.Stats(), Reader: s.db.Reader.Stats(), WALBytes: s.walFrames.Load() * sqlitePageSize,
	}
	st.WindowEvents, st.WindowBytes, st.Watchers = s.feed.hub.size()
	return st, nil
}

// sqlitePageSize is the page size of the databases the store creates, and so of a WAL frame.
const sqlitePageSize = 4096

// nopObserver observes nothing: the store's Observer when Options has none.
type nopObserver struct{}

func (nopObserver) Committed(int, time.Duration)   {}
func (nopObserver) Published(int, time.Duration)   {}
func (nopObserver) Woken(string)                   {}
func (nopObserver) CaughtUp(int)                   {}
func (nopObserver) Compacted(int64, time.Duration) {}
func (nopObserver) Checkpointed(time.Duration)     {}
