package kuberef

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// postgresAdmin is the PostgreSQL server sqlkube's tests use (the same variable and default as
// sqlkube's sqltest package); the database it names only creates and drops test databases.
func postgresAdmin() string {
	if dsn := os.Getenv("SQLKUBE_TEST_POSTGRES"); dsn != "" {
		return dsn
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// postgresDSN creates a database of the test's own, dropped when it ends. Without a reachable
// server it answers "" (sqlkube then runs on SQLite only), or fails the test in CI.
func postgresDSN(t *testing.T) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin := postgresAdmin()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		if inCI() {
			t.Fatalf("PostgreSQL not reachable: %v", err)
		}
		t.Logf("PostgreSQL not reachable, sqlkube runs on SQLite only: %v", err)
		return ""
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "sqlkube_conformance_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("SQLKUBE_TEST_POSTGRES must be a postgres:// URL: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// inCI reports whether the tests run in CI: CI is set to anything but "", "0" or "false", as
// sqlkube's own tests read it (sqltest.InCI).
func inCI() bool {
	switch strings.ToLower(os.Getenv("CI")) {
	case "", "0", "false":
		return false
	}
	return true
}
