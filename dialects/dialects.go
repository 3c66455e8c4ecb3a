// Package dialects holds what differs between the SQL databases sqlkube runs on: DSN parsing,
// classifying driver errors, and the Database each dialect's package builds for sqlstore (pools,
// SQL differences, how a write batch is written and a transaction run). It knows nothing about
// Kubernetes.
package dialects

import (
	"fmt"
	"strings"
)

// Name identifies a dialect.
type Name string

const (
	SQLite   Name = "sqlite"
	Postgres Name = "postgres"
)

// Parse picks the dialect of a DSN by its scheme: "sqlite://PATH", "postgres://..." or
// "postgresql://...".
func Parse(dsn string) (Name, error) {
	scheme, _, found := strings.Cut(dsn, "://")
	switch {
	case !found:
		return "", fmt.Errorf("invalid database DSN %q: expected sqlite://PATH, postgres://... or postgresql://...", redact(dsn))
	case scheme == "sqlite":
		return SQLite, nil
	case scheme == "postgres" || scheme == "postgresql":
		return Postgres, nil
	}
	return "", fmt.Errorf("unsupported database scheme %q: accepted schemes are sqlite://, postgres:// and postgresql://", scheme)
}

// redact hides everything after an '@', where a password may be.
func redact(dsn string) string {
	if i := strings.LastIndex(dsn, "@"); i >= 0 {
		return "…" + dsn[i:]
	}
	return dsn
}

// Kind is what a driver error means to the caller.
type Kind int

const (
	// Other errors are not retried.
	Other Kind = iota
	// UniqueViolation: an insert hit an existing key.
	UniqueViolation
	// Retry: the transaction lost a race (serialization failure, deadlock, database busy) and can
	// be run again as is.
	Retry
	// Unavailable: the database could not be reached or is shutting down.
	Unavailable
)
