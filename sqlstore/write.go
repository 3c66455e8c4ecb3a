package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/sqlkube/sqlkube/dialects"
)

// Group commit bounds: a batch takes at most this many writes or, once it holds this many
// rendered bytes, no further write (the rest wait for the next batch).
const (
	maxBatchWrites = 256
	maxBatchBytes  = 4 << 20
)

// A batch whose transaction loses a race (SQLite busy, serialization failure, deadlock) is run
// again, at most maxBatchAttempts times in all; one whose connection failed before COMMIT (a
// pooled connection that a database restart broke) runs once more, on a fresh connection. Then
// its writes fail with ErrUnavailable.
const (
	maxBatchAttempts      = 5
	maxConnectionAttempts = 2
	retryBackoff          = 20 * time.Millisecond
)

// writeTimeout bounds one batch transaction, so that requests fail rather than hang while the
// database is unreachable.
const writeTimeout = 10 * time.Second

// Lifecycle of a pendingWrite: queued until the committer takes it into a batch (then it is
// always answered) or its caller abandons it (then it is never written).
const (
	writeQueued int32 = iota
	writeTaken
	writeAbandoned
)

type pendingWrite struct {
	ctx   context.Context
	write Write
	state atomic.Int32
	done  chan writeResult // buffered: the committer never blocks on an answer
}

type writeResult struct {
	obj Object
	err error
}

// Write applies one change in its own revision and returns the stored object. Concurrent writes
// are committed together (group commit); Write returns only after its commit is durable.
//
// A ctx that ends while the write waits in the queue answers ctx's error and nothing is written;
// once the write is in a batch, it completes and its result is returned.
func (s *Store) Write(ctx context.Context, w Write) (Object, error) {
	if err := validateWrite(w); err != nil {
		return Object{}, err
	}
	p := &pendingWrite{ctx: ctx, write: w, done: make(chan writeResult, 1)}
	select {
	case s.writes <- p:
	case <-ctx.Done():
		return Object{}, ctx.Err()
	case <-s.closing:
		return Object{}, ErrClosed
	}
	var abandonErr error
	select {
	case r := <-p.done:
		return r.obj, r.err
	case <-ctx.Done():
		abandonErr = ctx.Err()
	case <-s.committerDone:
		abandonErr = ErrClosed
	}
	if p.state.CompareAndSwap(writeQueued, writeAbandoned) {
		return Object{}, abandonErr
	}
	r := <-p.done
	return r.obj, r.err
}

// validateWrite rejects what the database cannot store (PostgreSQL text holds neither NUL nor
// invalid UTF-8), so that one bad write never fails the batch it would share with others.
func validateWrite(w Write) error {
	if w.Op != OpCreate && w.Op != OpUpdate && w.Op != OpDelete {
		return fmt.Errorf("sqlstore: invalid write operation %v", w.Op)
	}
	if w.Render == nil {
		return errors.New("sqlstore: write without Render")
	}
	return validateKey(w.Key)
}

// validateKey rejects keys the database cannot store or the store cannot name.
func validateKey(key Key) error {
	if key.Resource == "" || key.Name == "" {
		return fmt.Errorf("sqlstore: key needs a resource and a name, got %q/%q", key.Resource, key.Name)
	}
	if !storable(key.Resource, key.Namespace, key.Name) {
		return fmt.Errorf("%w: %q/%q/%q", ErrUnstorableKey, key.Resource, key.Namespace, key.Name)
	}
	return nil
}

// storable reports whether every part is text both databases hold: valid UTF-8 without NUL.
// A key that is not cannot have been written, so reads answer it as absent rather than ask
// PostgreSQL, which refuses such text as an error.
func storable(parts ...string) bool {
	for _, part := range parts {
		if !utf8.ValidString(part) || strings.IndexByte(part, 0) >= 0 {
			return false
		}
	}
	return true
}

// commitLoop is the committer: it takes the writes waiting at that moment, commits them in one
// transaction, answers them, and starts over. A lone write is committed at once.
func (s *Store) commitLoop() {
	defer close(s.committerDone)
	var carried []*pendingWrite // taken but left out of the previous batch by maxBatchBytes
	for {
		if len(carried) == 0 {
			select {
			case p := <-s.writes:
				carried = s.take(carried, p)
			case <-s.closing:
				return
			}
		}
		batch := s.gather(carried)
		if len(batch) == 0 {
			carried = nil
			continue
		}
		carried = s.commit(batch)
		s.prepareWriteStatements()
		s.restartWALIfDue()
	}
}

// restartWALIfDue restarts a WAL the checkpointer found too long, after a batch's writes were
// answered. A restart that readers kept from completing is tried again after the next batch.
func (s *Store) restartWALIfDue() {
	if !s.walRestartDue.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	restarted, err := s.db.RestartWAL(ctx)
	if err != nil {
		s.logger().Warn("sqlstore: restarting the WAL failed; will retry", "err", err)
	}
	if restarted {
		s.walRestartDue.Store(false)
	}
}

// prepareWriteStatements prepares the statement shapes the last batch ran unprepared, after its
// writes were answered (on dialects that prepare them).
func (s *Store) prepareWriteStatements() {
	if s.db.PrepareWrites == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := s.db.PrepareWrites(ctx); err != nil {
		s.logger().Debug("sqlstore: preparing write statements failed", "err", err)
	}
}

// gather adds the queued writes to batch, up to maxBatchWrites, without waiting for more.
func (s *Store) gather(batch []*pendingWrite) []*pendingWrite {
	for len(batch) < maxBatchWrites {
		select {
		case p := <-s.writes:
			batch = s.take(batch, p)
		default:
			return batch
		}
	}
	return batch
}

// take claims p for a batch unless its caller has gone; a caller whose ctx ended while queued is
// answered without writing.
func (s *Store) take(batch []*pendingWrite, p *pendingWrite) []*pendingWrite {
	if !p.state.CompareAndSwap(writeQueued, writeTaken) {
		return batch
	}
	if err := p.ctx.Err(); err != nil {
		p.done <- writeResult{err: err}
		return batch
	}
	return append(batch, p)
}

// commit applies batch in one transaction, retrying lost races, answers the writes it applied,
// and returns those left for the next batch.
func (s *Store) commit(batch []*pendingWrite) (left []*pendingWrite) {
	s.feed.beginCommit()
	defer s.feed.endCommit()
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		start := time.Now()
		outcome, err := s.applyBatch(ctx, batch)
		cancel()
		if err == nil {
			s.opts.Observer.Committed(len(outcome.results), time.Since(start))
			if outcome.current > 0 {
				s.feed.handOff(batch, outcome.results, outcome.current)
			}
			for i, r := range outcome.results {
				batch[i].done <- r
			}
			return batch[len(outcome.results):]
		}
		if attempt < s.attemptsFor(err) {
			time.Sleep(time.Duration(attempt) * retryBackoff)
			continue
		}
		if len(batch) > 1 && s.db.Classify(err) != dialects.Unavailable {
			// Something in one write broke the transaction: commit each on its own, so that
			// only the culprit fails.
			for _, p := range batch {
				s.commit([]*pendingWrite{p})
			}
			return nil
		}
		s.logger().Warn("sqlstore: write batch failed", "writes", len(batch), "attempts", attempt, "err", err)
		failure := fmt.Errorf("%w: committing writes: %v", ErrUnavailable, err)
		for _, p := range batch {
			p.done <- writeResult{err: failure}
		}
		return nil
	}
}

// attemptsFor says how many attempts in all a batch that failed with err may have: more than
// one if it lost a race, or if its connection failed before COMMIT (after a failed COMMIT the
// batch may have been written, so it must not run again).
func (s *Store) attemptsFor(err error) int {
	var ambiguous *dialects.CommitError
	switch s.db.Classify(err) {
	case dialects.Retry:
		return maxBatchAttempts
	case dialects.Unavailable:
		if !errors.As(err, &ambiguous) {
			return maxConnectionAttempts
		}
	}
	return 1
}
