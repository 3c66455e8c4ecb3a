package services

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/storage"

	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// TestStoredLeases: two replicas on one database each hold a lease on their address; both are
// listed while renewed, one whose replica stops renewing is dropped (and deleted) once its TTL
// has passed, and removing a lease that is not there is storage's NotFound, as in etcd.
func TestStoredLeases(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		store, err := sqlstore.Open(ctx, sqltest.Database(t, dsn, sqlstore.SQLite, sqlstore.Postgres), sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = store.Close() })
		now := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
		clock := func() time.Time { return now }
		a, b := &storedLeases{ctx: ctx, store: store, now: clock}, &storedLeases{ctx: ctx, store: store, now: clock}

		if err := a.RemoveLease("10.0.0.1"); !storage.IsNotFound(err) {
			t.Fatalf("removing an absent lease: %v, want storage's NotFound", err)
		}
		for _, renew := range []func() error{func() error { return a.UpdateLease("10.0.0.1") }, func() error { return b.UpdateLease("10.0.0.2") }} {
			if err := renew(); err != nil {
				t.Fatal(err)
			}
		}
		assertLeases(t, b, "10.0.0.1", "10.0.0.2")

		now = now.Add(leaseTTL - time.Second)
		if err := b.UpdateLease("10.0.0.2"); err != nil {
			t.Fatal(err)
		}
		assertLeases(t, a, "10.0.0.1", "10.0.0.2")
		now = now.Add(2 * time.Second) // a's lease has expired, b's was renewed
		assertLeases(t, b, "10.0.0.2")
		if _, err := store.Get(ctx, leaseKey("10.0.0.1")); err != sqlstore.ErrNotFound {
			t.Fatalf("the expired lease is still stored: %v", err)
		}

		if err := a.UpdateLease("10.0.0.1"); err != nil { // a comes back
			t.Fatal(err)
		}
		assertLeases(t, a, "10.0.0.1", "10.0.0.2")
		if err := b.RemoveLease("10.0.0.2"); err != nil {
			t.Fatal(err)
		}
		assertLeases(t, a, "10.0.0.1")
	})
}

func assertLeases(t *testing.T, l *storedLeases, want ...string) {
	t.Helper()
	got, err := l.ListLeases()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("leases %q, want %q", got, want)
	}
}

// TestCheckSharedCA: a replica is refused beside a live one whose leases name another CA, and
// accepted once that lease has expired, beside one of its own CA, or when it mints nothing.
func TestCheckSharedCA(t *testing.T) {
	ctx := context.Background()
	store, err := sqlstore.Open(ctx, sqlstore.SQLite(sqltest.SQLitePath(t)), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	now := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	serving := &storedLeases{ctx: ctx, store: store, now: clock, ca: "aaaa"}
	if err := serving.UpdateLease("10.0.0.1"); err != nil {
		t.Fatal(err)
	}
	other := &storedLeases{ctx: ctx, store: store, now: clock, ca: "bbbb"}
	err = other.checkSharedCA()
	if want := "the replica serving this database at 10.0.0.1 mints client certificates with another CA (SHA-256 aaaa; this server's is bbbb)"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("beside a replica of another CA: %v, want %q...", err, want)
	}
	for name, l := range map[string]*storedLeases{
		"the same CA": {ctx: ctx, store: store, now: clock, ca: "aaaa"},
		"no CA":       {ctx: ctx, store: store, now: clock},
	} {
		if err := l.checkSharedCA(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	now = now.Add(leaseTTL + time.Second)
	if err := other.checkSharedCA(); err != nil {
		t.Errorf("once the other replica's lease has expired: %v", err)
	}
}
