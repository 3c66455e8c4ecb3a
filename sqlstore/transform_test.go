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

// rot13 "encrypts" the values of the resource it covers: what the database keeps is unreadable
// as written, and carries the key it belongs to, as authenticated encryption binds a value to its
// key. Values of other resources are read as stored, unless they look transformed.
type rot13 struct{ covers string }

func (r rot13) Transforms(resource string) bool { return resource == r.covers }

func (rot13) ToStorage(_ context.Context, key sqlstore.Key, value []byte) ([]byte, error) {
	return append([]byte("rot13:"+key.Name+":"), bytes.Map(rotate, value)...), nil
}

func (r rot13) FromStorage(_ context.Context, key sqlstore.Key, stored []byte) ([]byte, bool, error) {
	if !r.Transforms(key.Resource) {
		if bytes.HasPrefix(stored, []byte("rot13:")) {
			return nil, false, errors.New("transformed, but not configured")
		}
		return stored, false, nil
	}
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
		s := openStoreWith(t, dsn, sqlstore.Options{Transformer: rot13{covers: "secrets"}, Mark: marked})
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

// TestTransformerUnreadable: a value the Transformer cannot read (here: transformed, read by a
// store whose Transformer no longer covers its resource) is an *UnreadableError on Get and List,
// and an event carrying it on a watch replaying the log, while the feed goes on publishing the
// events after it.
func TestTransformerUnreadable(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStoreWith(t, dsn, sqlstore.Options{Transformer: rot13{covers: "secrets"}})
		start := currentRevision(t, s)
		secret := sqlstore.Key{Resource: "secrets", Namespace: "ns", Name: "s"}
		create(t, s, secret, "password")
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = openStoreWith(t, dsn, sqlstore.Options{Transformer: rot13{}}) // restarted without it
		wantUnreadable := func(what string, err error) {
			t.Helper()
			var unreadable *sqlstore.UnreadableError
			if !errors.As(err, &unreadable) || unreadable.Key != secret {
				t.Errorf("%s: %v, want an UnreadableError about %v", what, err, secret)
			}
		}
		_, err := s.Get(ctx, secret)
		wantUnreadable("Get", err)
		_, err = s.List(ctx, sqlstore.ListOptions{Resource: "secrets"}, func(sqlstore.Object) error { return nil })
		wantUnreadable("List", err)

		w, err := s.Watch(ctx, sqlstore.WatchOptions{Resource: "secrets", After: start})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		later := sqlstore.Key{Resource: "secrets", Namespace: "ns", Name: "later"}
		create(t, s, later, "plain")
		for _, want := range []sqlstore.Key{secret, later} {
			select {
			case ev := <-w.Events():
				if ev.Object.Key != want || (ev.Err != nil) != (want == secret) {
					t.Fatalf("event about %v (err %v), want %v", ev.Object.Key, ev.Err, want)
				}
				if want == secret {
					wantUnreadable("the watch event", ev.Err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no event about %v", want)
			}
		}
	})
}
