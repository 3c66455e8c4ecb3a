package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// maxCachedStatements bounds the statements a cache prepares; beyond it statements run
// unprepared. Batch statements have one shape per batch size, so a few hundred cover them.
const maxCachedStatements = 512

// stmtCache keeps prepared statements by SQL text, so that the statements of each write batch are
// parsed once per shape instead of once per batch (SQLite parses on every unprepared call).
//
// A statement first seen inside a transaction runs unprepared and is prepared after the
// transaction ends (prepare): preparing on the pool while a transaction holds SQLite's only
// writer connection would wait forever.
type stmtCache struct {
	db       *sql.DB
	capacity int
	mu       sync.Mutex
	stmts    map[string]*sql.Stmt
	missing  map[string]bool
}

// newStmtCache prepares up to capacity statements on db.
func newStmtCache(db *sql.DB, capacity int) *stmtCache {
	return &stmtCache{db: db, capacity: capacity, stmts: map[string]*sql.Stmt{}, missing: map[string]bool{}}
}

// in returns query prepared for tx, or nil (noting it for prepare) when not prepared yet.
func (c *stmtCache) in(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	stmt, ok := c.stmts[query]
	if !ok {
		if len(c.stmts)+len(c.missing) < c.capacity {
			c.missing[query] = true
		}
		return nil
	}
	return tx.StmtContext(ctx, stmt)
}

// prepare prepares the statements run unprepared since the last call. Call it outside any
// transaction of the cache's pool.
func (c *stmtCache) prepare(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for query := range c.missing {
		stmt, err := c.db.PrepareContext(ctx, query)
		if err != nil {
			return err
		}
		c.stmts[query] = stmt
		delete(c.missing, query)
	}
	return nil
}

// exec runs query in tx, prepared when the cache has room.
func (c *stmtCache) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	var err error
	if stmt := c.in(ctx, tx, query); stmt != nil {
		_, err = stmt.ExecContext(ctx, args...)
	} else {
		_, err = tx.ExecContext(ctx, query, args...)
	}
	return err
}

// query runs query in tx, prepared when the cache has room.
func (c *stmtCache) query(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if stmt := c.in(ctx, tx, query); stmt != nil {
		return stmt.QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, query, args...)
}

func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, stmt := range c.stmts {
		errs = append(errs, stmt.Close())
	}
	return errors.Join(errs...)
}
