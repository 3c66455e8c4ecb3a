package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sqlkube/sqlkube/dialects"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		err  error
		want dialects.Kind
	}{
		{&pgconn.PgError{Code: "23505"}, dialects.UniqueViolation},
		{fmt.Errorf("insert: %w", &pgconn.PgError{Code: "23505"}), dialects.UniqueViolation},
		{&pgconn.PgError{Code: "40001"}, dialects.Retry},
		{&pgconn.PgError{Code: "40P01"}, dialects.Retry},
		{&pgconn.PgError{Code: "57P01"}, dialects.Unavailable},
		{&pgconn.PgError{Code: "57P03"}, dialects.Unavailable},
		{&pgconn.PgError{Code: "08006"}, dialects.Unavailable},
		{&pgconn.PgError{Code: "42601"}, dialects.Other},
		{driver.ErrBadConn, dialects.Unavailable},
		{io.ErrUnexpectedEOF, dialects.Unavailable},
		{errors.New("unique_violation 23505 serialization"), dialects.Other},
	}
	for _, c := range cases {
		if got := Classify(c.err); got != c.want {
			t.Errorf("Classify(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestRebind(t *testing.T) {
	got := Rebind(`SELECT a FROM t WHERE b = ? AND (c, d) > (?, ?)`)
	if want := `SELECT a FROM t WHERE b = $1 AND (c, d) > ($2, $3)`; got != want {
		t.Fatalf("Rebind = %s, want %s", got, want)
	}
}

// TestOpenUnreachableFails: an unreachable server fails Open promptly instead of hanging.
func TestOpenUnreachableFails(t *testing.T) {
	start := time.Now()
	_, err := Open(context.Background(), "postgres://postgres@127.0.0.1:1/none?connect_timeout=2", 1)
	if err == nil || Classify(err) != dialects.Unavailable {
		t.Fatalf("Open on a closed port: %v (kind %v), want an Unavailable error", err, Classify(err))
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("Open took %v", took)
	}
}
