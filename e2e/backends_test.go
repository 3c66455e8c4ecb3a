package e2e

import (
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
