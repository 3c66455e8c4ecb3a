package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/sqlkube/sqlkube/server/app"
)

const compactUsage = `sqlkube compact discards the history of a database now, keeping only the latest state of
every object, and rewrites the database so that none of its files keeps what was discarded
(SQLite: VACUUM, then the WAL emptied; PostgreSQL: VACUUM FULL of sqlkube's tables, which
PostgreSQL's WAL and backups still hold). Run it after rewriting every Secret once encryption
at rest is on, and no plaintext of them is left in the database. Servers may keep running:
watches and paginated lists from before answer 410 Gone, as after any compaction, and writes
wait while the database is rewritten.

Usage:
  sqlkube compact --db DSN
`

// runCompact is `sqlkube compact`: Store.CompactAll on the database --db names.
func runCompact(ctx context.Context, args, env []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("sqlkube compact", pflag.ContinueOnError)
	dsn := fs.String("db", app.DefaultDSN, "database: sqlite://PATH or postgres://... (as the server's --db; also "+app.EnvName("db")+")")
	help, err := parseCommandFlags(fs, compactUsage, args, env, stdout)
	if help {
		return 0
	}
	if err == nil && fs.NArg() != 0 {
		err = fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err != nil {
		fmt.Fprintf(stderr, "sqlkube compact: %v\n", err)
		return 2
	}
	if err := compactAll(ctx, *dsn, stdout); err != nil {
		fmt.Fprintf(stderr, "sqlkube compact: %v\n", err)
		return 1
	}
	return 0
}

func compactAll(ctx context.Context, dsn string, stdout io.Writer) error {
	store, err := openExisting(ctx, dsn)
	if err != nil {
		return err
	}
	revision, err := store.CompactAll(ctx)
	if closeErr := store.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Compacted all history up to revision %d and rewrote the database\n", revision)
	return nil
}
