package e2e

import (
	"strings"
	"testing"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// forEachServer runs test as one subtest per backend ("sqlite", "postgres"), each against a
// server started on a fresh database.
func forEachServer(t *testing.T, test func(t *testing.T, s *sqlkubeServer)) {
	sqltest.Backends(t, func(t *testing.T, dsn string) { test(t, startServer(t, dsn)) })
}

// forEachServerWith is forEachServer with extra flags for the servers.
func forEachServerWith(t *testing.T, args []string, test func(t *testing.T, s *sqlkubeServer)) {
	sqltest.Backends(t, func(t *testing.T, dsn string) { test(t, startServer(t, dsn, args...)) })
}

// backendOf names the backend of a DSN as the benchmark tables do.
func backendOf(dsn string) string {
	if strings.HasPrefix(dsn, "postgres") {
		return "PostgreSQL"
	}
	return "SQLite"
}

// newDSN is a fresh database of backend ("SQLite" or "PostgreSQL"), dropped when t ends.
func newDSN(t *testing.T, backend string) string {
	if backend == "PostgreSQL" {
		return sqltest.PostgresDSN(t)
	}
	return sqltest.SQLiteDSN(t)
}
