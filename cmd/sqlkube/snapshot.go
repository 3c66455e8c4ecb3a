package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sqlkube/sqlkube/dialects"
	"github.com/sqlkube/sqlkube/dialects/sqlite"
	"github.com/sqlkube/sqlkube/server/app"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/snapshot"
)

const snapshotUsage = `sqlkube snapshot saves the objects of a database to a file and restores them into another
database, of the same kind or not (SQLite to PostgreSQL and back).

Usage:
  sqlkube snapshot save --db DSN FILE      save a consistent snapshot; servers may keep running
  sqlkube snapshot restore --db DSN FILE   restore into an empty database, keeping resourceVersions
  sqlkube snapshot status [-w FORMAT] FILE verify a snapshot and print its hash, revision,
                                           object count and size
`

// runSnapshot is `sqlkube snapshot save|restore|status`, after etcdutl's snapshot commands.
func runSnapshot(ctx context.Context, args, env []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || isFlag(args[0]) {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprint(stdout, snapshotUsage)
			return 0
		}
		fmt.Fprint(stderr, snapshotUsage)
		return 2
	}
	fs := pflag.NewFlagSet("sqlkube snapshot "+args[0], pflag.ContinueOnError)
	var run func(file string) error
	switch args[0] {
	case "save", "restore":
		dsn := fs.String("db", app.DefaultDSN, "database: sqlite://PATH or postgres://... (as the server's --db; also "+app.EnvName("db")+")")
		if args[0] == "save" {
			run = func(file string) error { return saveSnapshot(ctx, *dsn, file, stdout) }
		} else {
			run = func(file string) error { return restoreSnapshot(ctx, *dsn, file, stdout) }
		}
	case "status":
		format := fs.StringP("write-out", "w", "simple", "output format: simple, table or json")
		run = func(file string) error { return printSnapshotStatus(file, *format, stdout) }
	default:
		fmt.Fprintf(stderr, "sqlkube snapshot: unknown command %q\n\n%s", args[0], snapshotUsage)
		return 2
	}
	help, err := parseCommandFlags(fs, snapshotUsage, args[1:], env, stdout)
	if help {
		return 0
	}
	if err == nil && fs.NArg() != 1 {
		err = errors.New("expected one snapshot FILE argument")
	}
	if err != nil {
		fmt.Fprintf(stderr, "sqlkube snapshot %s: %v\n", args[0], err)
		return 2
	}
	if err := run(fs.Arg(0)); err != nil {
		fmt.Fprintf(stderr, "sqlkube snapshot %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func saveSnapshot(ctx context.Context, dsn, file string, stdout io.Writer) error {
	store, err := openExisting(ctx, dsn)
	if err != nil {
		return err
	}
	status, err := snapshot.Save(ctx, store, file)
	if closeErr := store.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Snapshot saved at %s: revision %d, %d objects, %s\n", file, status.Revision, status.TotalKey, humanBytes(status.TotalSize))
	return nil
}

// openExisting opens the store of the database dsn names (as the server's --db), refusing a SQLite
// database that does not exist rather than create an empty one and work on that.
func openExisting(ctx context.Context, dsn string) (*sqlstore.Store, error) {
	if err := checkSQLiteExists(dsn); err != nil {
		return nil, err
	}
	db, err := app.Database(dsn)
	if err != nil {
		return nil, err
	}
	return sqlstore.Open(ctx, db, sqlstore.Options{Logger: warnLogger()})
}

// checkSQLiteExists fails if dsn names a SQLite database that does not exist.
func checkSQLiteExists(dsn string) error {
	if name, err := dialects.Parse(dsn); err != nil || name != dialects.SQLite {
		return err
	}
	path, err := sqlite.Path(dsn)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("no SQLite database to save at %s: %w", path, err)
	}
	return nil
}

func restoreSnapshot(ctx context.Context, dsn, file string, stdout io.Writer) error {
	db, err := app.Database(dsn)
	if err != nil {
		return err
	}
	status, err := snapshot.Restore(ctx, db, file)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Restored %d objects from %s at revision %d\n", status.TotalKey, file, status.Revision)
	return nil
}

func printSnapshotStatus(file, format string, stdout io.Writer) error {
	if format != "simple" && format != "table" && format != "json" {
		return fmt.Errorf("unknown output format %q (want simple, table or json)", format)
	}
	status, err := snapshot.Verify(file)
	if err != nil {
		return err
	}
	switch format {
	case "json":
		return json.NewEncoder(stdout).Encode(status)
	case "table":
		_, err = io.WriteString(stdout, boxTable(
			[]string{"HASH", "REVISION", "TOTAL KEYS", "TOTAL SIZE", "VERSION"},
			[]string{status.Hash, fmt.Sprint(status.Revision), fmt.Sprint(status.TotalKey), humanBytes(status.TotalSize), fmt.Sprint(status.FormatVersion)}))
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s, %d, %d, %s, %d\n", status.Hash, status.Revision, status.TotalKey, humanBytes(status.TotalSize), status.FormatVersion)
	return err
}

// humanBytes writes a size in SI units, as etcdutl prints snapshot sizes.
func humanBytes(n int64) string {
	units := []string{"B", "kB", "MB", "GB", "TB"}
	value, unit := float64(n), 0
	for value >= 1000 && unit < len(units)-1 {
		value /= 1000
		unit++
	}
	if unit == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", value, units[unit])
}

// warnLogger logs the store's warnings to standard error.
func warnLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// boxTable draws a header and one row in a box, as etcdutl's table output does.
func boxTable(header, row []string) string {
	var border, head, body strings.Builder
	for i := range header {
		width := max(len(header[i]), len(row[i]))
		border.WriteString("+" + strings.Repeat("-", width+2))
		fmt.Fprintf(&head, "| %-*s ", width, header[i])
		fmt.Fprintf(&body, "| %-*s ", width, row[i])
	}
	line := border.String() + "+\n"
	return line + head.String() + "|\n" + line + body.String() + "|\n" + line
}
