package sqlstore_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// rot13 "encrypts" the values of secrets: what the database keeps is unreadable as written, and
// carries the key it belongs to, as authenticated encryption binds a value to its key.
type rot13 struct{}

func (rot13) Transforms(resource string) bool { return resource == "secrets" }

func (rot13) ToStorage(_ context.Context, key sqlstore.Key, value []byte) ([]byte, error) {
	return append([]byte("rot13:"+key.Name+":"), bytes.Map(rotate, value)...), nil
}

func (rot13) FromStorage(_ context.Context, key sqlstore.Key, stored []byte) ([]byte, bool, error) {
	rest, ok := bytes.CutPrefix(stored, []byte("rot13:"+key.Name+":"))
	if !ok {
		return nil, false, errors.New("not transformed for this key")
	}
	return bytes.Map(rotate, rest), false, nil
}

func rotate(r rune) rune {
	switch {
	case r >= 'a' && r <= 'z':
		return 'a' + (r-'a'+13)%26
	case r >= 'A' && r <= 'Z':
		return 'A' + (r-'A'+13)%26
	}
	return r
}

// TestTransformer: the values of a transformed resource are kept transformed in the database,
// and read back as written by Get, List (ValueContains included, and Mark sees them as written),
// and watches, live and replayed from the log; other resources are kept as they are.
func TestTransformer(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		marked := func(value []byte) bool { return bytes.Contains(value, []byte("owner")) }
		s := openStoreWith(t, sqlstore.Options{DSN: dsn, Transformer: rot13{}, Mark: marked})
		ctx := context.Background()
		start := currentRevision(t, s)
		secret := sqlstore.Key{Resource: "secrets", Namespace: "ns", Name: "s"}
		create(t, s, secret, "password owner")
		create(t, s, cm("ns", "c"), "plain")

		if got, err := s.Get(ctx, secret); err != nil || !strings.Contains(string(got.Value), "password owner") {
			t.Fatalf("Get: %s, %v", got.Value, err)
		}
		for _, opts := range []sqlstore.ListOptions{
			{Resource: "secrets", ValueContains: [][]byte{[]byte("password")}},
			{Resource: "secrets", Marked: true},
		} {
			objs, _ := listAll(t, s, opts)
			if len(objs) != 1 || !strings.Contains(string(objs[0].Value), "password") {
				t.Errorf("list %+v: %d objects", opts, len(objs))
			}
		}
		if objs, _ := listAll(t, s, sqlstore.ListOptions{Resource: "secrets", ValueContains: [][]byte{[]byte("nothing")}}); len(objs) != 0 {
			t.Errorf("ValueContains matched %d objects", len(objs))
		}

		w, err := s.Watch(ctx, sqlstore.WatchOptions{Resource: "secrets", After: start})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		select {
		case ev := <-w.Events():
			if !strings.Contains(string(ev.Object.Value), "password owner") {
				t.Errorf("watch event: %s", ev.Object.Value)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event")
		}

		db := sqltest.Open(t, dsn)
		var raw []byte
		if err := db.QueryRow(`SELECT value FROM revisions WHERE resource = 'secrets'`).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte("password")) || !bytes.HasPrefix(raw, []byte("rot13:s:")) {
			t.Errorf("the database keeps %q", raw)
		}
		if err := db.QueryRow(`SELECT value FROM revisions WHERE resource = 'configmaps'`).Scan(&raw); err != nil || !bytes.Contains(raw, []byte("plain")) {
			t.Errorf("an untransformed resource is kept as %q (%v)", raw, err)
		}
	})
}
