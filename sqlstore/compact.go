package sqlstore

import (
	"context"
	"database/sql"
	"time"
)

// compactBatch is how many revisions one compaction transaction covers, so that each holds its
// locks (and SQLite's single writer) only briefly.
const compactBatch = 2000

// txStarter is a pool or a connection the compactor runs its transactions and upkeep on.
type txStarter interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Compact discards history at and below revision, keeping what reads after it need: the newest
// row at or below revision of every key that still exists at revision. Reads at revisions below
// it fail with *CompactedError from then on. The compacted revision never moves backwards.
//
// History goes in short transactions of compactBatch revisions. A compaction that stopped half
// way (crash, error) is finished by the next one.
func (s *Store) Compact(ctx context.Context, revision int64) error {
	_, err := s.withCompactionLock(ctx, true, func(ctx context.Context, db txStarter) error {
		return s.compactLocked(ctx, db, revision)
	})
	return err
}

// CompactAll discards all history now, keeping only the latest state of every object (Compact
// at the current revision), then rewrites the database so that its files no longer hold the
// bytes of what was discarded: on SQLite the file is vacuumed and the WAL emptied; on PostgreSQL
// sqlkube's tables are rewritten (VACUUM FULL; PostgreSQL's WAL, and backups, still hold them).
// It returns the revision compacted to.
func (s *Store) CompactAll(ctx context.Context) (int64, error) {
	revision, err := s.CurrentRevision(ctx)
	if err != nil {
		return 0, err
	}
	if err := s.Compact(ctx, revision); err != nil {
		return 0, err
	}
	if err := s.db.Rewrite(ctx); err != nil {
		return 0, s.dbError(ctx, "rewriting the database", err)
	}
	return revision, nil
}

// withCompactionLock runs compact as the only compaction of all replicas. With wait false it
// returns false, doing nothing, when another replica is compacting.
func (s *Store) withCompactionLock(ctx context.Context, wait bool, compact func(context.Context, txStarter) error) (bool, error) {
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	if s.db.LockCompaction == nil {
		return true, compact(ctx, s.db.Writer)
	}
	// The advisory lock belongs to a session: keep one connection for the lock and the work.
	conn, err := s.db.Writer.Conn(ctx)
	if err != nil {
		return false, s.dbError(ctx, "connecting to compact", err)
	}
	defer conn.Close()
	locked, unlock, err := s.db.LockCompaction(ctx, conn, wait)
	if err != nil {
		return false, s.dbError(ctx, "taking the compaction lock", err)
	}
	if !locked {
		return false, nil
	}
	err = compact(ctx, conn)
	if unlockErr := unlock(); err == nil && unlockErr != nil {
		err = s.dbError(ctx, "releasing the compaction lock", unlockErr)
	}
	return true, err
}

func (s *Store) compactLocked(ctx context.Context, db txStarter, revision int64) error {
	start := time.Now()
	target, progress, err := s.raiseCompacted(ctx, db, revision)
	if err != nil {
		return err
	}
	var removed int64
	for progress < target {
		next := min(progress+compactBatch, target)
		rows, err := s.deleteHistory(ctx, db, progress, next)
		removed += rows
		if err != nil {
			return err
		}
		progress = next
	}
	if removed > 0 && s.db.AfterCompaction != "" {
		if _, err := db.ExecContext(ctx, s.db.AfterCompaction); err != nil {
			return s.dbError(ctx, "reclaiming compacted rows", err)
		}
	}
	s.opts.Observer.Compacted(removed, time.Since(start))
	return nil
}

// raiseCompacted moves the compacted revision up to revision (never down) before any row goes,
// so that no read starts at a revision whose history is being deleted. It returns the compacted
// revision and how far history below it has been deleted.
func (s *Store) raiseCompacted(ctx context.Context, db txStarter, revision int64) (compacted, progress int64, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, s.dbError(ctx, "starting compaction", err)
	}
	defer tx.Rollback()
	var current int64
	err = tx.QueryRowContext(ctx, `SELECT current, compacted, compact_progress FROM meta WHERE id = 1`).
		Scan(&current, &compacted, &progress)
	if err != nil {
		return 0, 0, s.dbError(ctx, "starting compaction", err)
	}
	if revision > current {
		return 0, 0, &FutureRevisionError{Requested: revision, Current: current}
	}
	if revision > compacted {
		compacted = revision
		if _, err := tx.ExecContext(ctx, s.db.Rebind(`UPDATE meta SET compacted = ? WHERE id = 1 AND compacted < ?`),
			revision, revision); err != nil {
			return 0, 0, s.dbError(ctx, "raising the compacted revision", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, s.dbError(ctx, "raising the compacted revision", err)
	}
	return compacted, progress, nil
}

// deleteHistory deletes the log rows that the writes in revisions (from, to] made unnecessary:
// the row each of them replaced (a key's row is needed only until its next write, once both are
// compacted) and the delete rows themselves (a deleted key has nothing to read). Since every row
// below to is compacted, no read needs them.
func (s *Store) deleteHistory(ctx context.Context, db txStarter, from, to int64) (removed int64, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, s.dbError(ctx, "compacting", err)
	}
	defer tx.Rollback()
	statements := []string{
		`DELETE FROM revisions WHERE revision IN (SELECT prev_revision FROM revisions WHERE revision > ? AND revision <= ? AND prev_revision > 0)`,
		`DELETE FROM revisions WHERE revision > ? AND revision <= ? AND op = 3`,
	}
	for _, statement := range statements {
		res, err := tx.ExecContext(ctx, s.db.Rebind(statement), from, to)
		if err != nil {
			return 0, s.dbError(ctx, "compacting", err)
		}
		rows, _ := res.RowsAffected() // both drivers report it; a count is only for metrics
		removed += rows
	}
	if _, err := tx.ExecContext(ctx, s.db.Rebind(`UPDATE meta SET compact_progress = ? WHERE id = 1`), to); err != nil {
		return 0, s.dbError(ctx, "compacting", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, s.dbError(ctx, "compacting", err)
	}
	return removed, nil
}

// revisionSample is the current revision as seen at a time: the compactor's memory of which
// revisions are older than the retention period.
type revisionSample struct {
	at       time.Time
	revision int64
}

// compactLoop compacts, every CompactionInterval, to the newest revision that is both older than
// Retention and at least RetentionMinRevisions below the current one. A failed run is logged and
// the next one tries again.
func (s *Store) compactLoop(ctx context.Context) {
	ticker := time.NewTicker(s.opts.CompactionInterval)
	defer ticker.Stop()
	var samples []revisionSample
	for {
		var err error
		samples, err = s.compactOnce(ctx, samples, time.Now())
		if err != nil && ctx.Err() == nil {
			s.logger().Warn("sqlstore: compaction failed; will retry", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// compactOnce records a sample of the current revision at now and compacts to the revision that
// the samples show is due. It returns the samples still needed.
func (s *Store) compactOnce(ctx context.Context, samples []revisionSample, now time.Time) ([]revisionSample, error) {
	current, compacted, err := s.readMeta(ctx, nil)
	if err != nil {
		return samples, err
	}
	samples = append(samples, revisionSample{at: now, revision: current})
	// Keep the newest sample older than the retention period, and all newer ones.
	cutoff := now.Add(-s.opts.Retention)
	due := -1
	for i, sample := range samples {
		if !sample.at.After(cutoff) {
			due = i
		}
	}
	if due < 0 {
		return samples, nil
	}
	samples = samples[due:]
	target := min(samples[0].revision, current-s.opts.RetentionMinRevisions)
	if target <= compacted {
		return samples, nil
	}
	start := time.Now()
	ran, err := s.withCompactionLock(ctx, false, func(ctx context.Context, db txStarter) error {
		return s.compactLocked(ctx, db, target)
	})
	if err != nil {
		return samples, err
	}
	if ran {
		s.logger().Info("sqlstore: compacted history", "revision", target, "current", current, "took", time.Since(start))
	}
	return samples, nil
}
