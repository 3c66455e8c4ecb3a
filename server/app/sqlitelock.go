package app

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockSQLiteFile keeps a second server off the SQLite file dsn names (once the store has opened
// it), until unlock: one process
// serves a SQLite database (its committer, change feed and watch window count on seeing every
// write as it is made); replicas share a PostgreSQL database. The lock is flock(2) on the
// database file, which SQLite's own (POSIX) locks do not see, and which the kernel releases when
// the process ends however it ends. sqlkube snapshot and compact take none: they run beside the
// server. A DSN that is not SQLite locks nothing.
func lockSQLiteFile(dsn string) (unlock func(), err error) {
	path := sqlitePath(dsn)
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Open(path) // the store has created it
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another sqlkube serves the SQLite database %s: a SQLite file is served by one process (replicas share a PostgreSQL database)", path)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
