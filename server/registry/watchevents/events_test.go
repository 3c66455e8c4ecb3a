package watchevents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/registry/selection"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

func configMaps(t *testing.T) *resource.Resource {
	for _, res := range builtin.Resources(func(*resource.Resource) {}, nil) {
		if res.Name == "configmaps" {
			return res
		}
	}
	t.Fatal("no configmaps")
	return nil
}

// converter is a watch of configmaps labelled app=x.
func converter(t *testing.T) *Converter {
	res := configMaps(t)
	sel, err := selection.New(res, &internalversion.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"app": "x"})}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return NewConverter(res, sel)
}

func configMap(name, app string, revision int64) *sqlstore.Object {
	return &sqlstore.Object{Key: sqlstore.Key{Resource: "configmaps", Namespace: "ns", Name: name}, Revision: revision,
		Value: fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"ns","resourceVersion":"%d","labels":{"app":%q}}}`, name, revision, app)}
}

// objectMeta is the metadata of an event's object.
func objectMeta(t *testing.T, ev Event) metav1.ObjectMeta {
	t.Helper()
	var obj struct{ Metadata metav1.ObjectMeta }
	if err := json.Unmarshal(ev.Object, &obj); err != nil {
		t.Fatalf("%s event's object: %v", ev.Type, err)
	}
	return obj.Metadata
}

// A write is ADDED, MODIFIED or DELETED as it enters, stays in or leaves the selection, and
// nothing outside it; one that leaves carries its last selected state at the write's revision.
func TestChangeThroughSelection(t *testing.T) {
	c := converter(t)
	tests := []struct {
		name string
		ev   *sqlstore.Event
		want watch.EventType
	}{
		{"enters", &sqlstore.Event{Op: sqlstore.OpCreate, Revision: 5, Object: *configMap("a", "x", 5)}, watch.Added},
		{"stays", &sqlstore.Event{Op: sqlstore.OpUpdate, Revision: 6, Object: *configMap("a", "x", 6), Prev: configMap("a", "x", 5)}, watch.Modified},
		{"outside", &sqlstore.Event{Op: sqlstore.OpCreate, Revision: 7, Object: *configMap("b", "y", 7)}, ""},
		{"deleted", &sqlstore.Event{Op: sqlstore.OpDelete, Revision: 8, Object: *configMap("a", "x", 8)}, watch.Deleted},
		{"at the floor", &sqlstore.Event{Op: sqlstore.OpCreate, Revision: 3, Object: *configMap("c", "x", 3)}, ""},
	}
	for _, tt := range tests {
		out, ok := c.Change(tt.ev, 4)
		if out.Type != tt.want || ok != (tt.want != "") {
			t.Errorf("%s: %q, %v; want %q", tt.name, out.Type, ok, tt.want)
		}
	}
	leaves := &sqlstore.Event{Op: sqlstore.OpUpdate, Revision: 9, Object: *configMap("a", "y", 9), Prev: configMap("a", "x", 6)}
	out, _ := c.Change(leaves, 4)
	if m := objectMeta(t, out); out.Type != watch.Deleted || m.Labels["app"] != "x" || m.ResourceVersion != "9" {
		t.Errorf("leaving: %s %+v", out.Type, m)
	}
}

// Progress is a bookmark, never before the floor; an unreadable event ends the watch.
func TestChangeBookmarksAndErrors(t *testing.T) {
	c := converter(t)
	out, ok := c.Change(&sqlstore.Event{Progress: true, Revision: 2}, 4)
	if !ok || out.Type != watch.Bookmark || objectMeta(t, out).ResourceVersion != "4" {
		t.Errorf("progress: %s %s", out.Type, out.Object)
	}
	out, ok = c.Change(&sqlstore.Event{Revision: 5, Err: errors.New("unreadable")}, 4)
	if !ok || out.Type != watch.Error || out.Err == nil {
		t.Errorf("unreadable: %+v", out)
	}
}

// A bookmark is an empty object of the type, encoded from its Go type; the one ending the
// initial events is annotated.
func TestBookmark(t *testing.T) {
	out, err := converter(t).Bookmark(12, true)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}`
	if string(out.Object) != want || string(out.Stored) != want {
		t.Errorf("bookmark\n%s\nwant\n%s", out.Object, want)
	}
}

func TestScheduleStopsBeforeDeadline(t *testing.T) {
	if NewSchedule(context.Background(), false, time.Millisecond).C() != nil {
		t.Error("bookmarks without allowWatchBookmarks")
	}
	// No bookmark fits before the one due shortly before a deadline this close.
	soon, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if NewSchedule(soon, true, time.Minute).C() != nil {
		t.Error("a bookmark after the last one before the deadline")
	}
	s := NewSchedule(context.Background(), true, time.Millisecond)
	defer s.Stop()
	select {
	case <-s.C():
	case <-time.After(10 * time.Second):
		t.Fatal("no bookmark after the interval")
	}
}
