package registry

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// A watch list gives the current objects, the bookmark that ends them, then pauses once it has
// its starting point; the changes after it follow, each batch ended by a pause.
func TestWatchListGivesInitialEventsThenChanges(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		r := newTestRegistry(t, openTestStore(t, dsn))
		_, configMaps := testTypes()
		mustCreate(t, r, configMaps, "default", "a")
		mustCreate(t, r, configMaps, "default", "b")
		sendInitialEvents := true
		w := startWatch(t, r, &internalversion.ListOptions{Watch: true, SendInitialEvents: &sendInitialEvents, AllowWatchBookmarks: true,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})

		wantEvent(t, w, watch.Added, "a")
		wantEvent(t, w, watch.Added, "b")
		bookmark := wantEvent(t, w, watch.Bookmark, "")
		if bookmark.Annotations[metav1.InitialEventsAnnotationKey] != "true" || bookmark.ResourceVersion == "" {
			t.Errorf("the bookmark ending the initial events: %+v", bookmark)
		}
		wantPause(t, w)
		if !w.Started() {
			t.Fatal("not started after the initial events")
		}

		mustCreate(t, r, configMaps, "default", "c")
		c := wantEvent(t, w, watch.Added, "c")
		if changed, initial := mustParseRevision(t, c.ResourceVersion), mustParseRevision(t, bookmark.ResourceVersion); changed <= initial {
			t.Errorf("change at %s, not after the bookmark's %s", c.ResourceVersion, bookmark.ResourceVersion)
		}
		wantPause(t, w)
	})
}

// Through a label selector, an object entering the selection is ADDED, one leaving it DELETED
// (its last selected state, at the revision it left), and objects outside it are not seen.
func TestWatchSeesChangesThroughItsSelector(t *testing.T) {
	r := newTestRegistry(t, openTestStore(t, sqltest.SQLiteDSN(t)))
	_, configMaps := testTypes()
	selector, _ := labels.Parse("app=x")
	w := startWatch(t, r, &internalversion.ListOptions{Watch: true, LabelSelector: selector})
	wantPause(t, w)

	mustCreate(t, r, configMaps, "default", "outside")
	ref := Ref{Resource: configMaps, Namespace: "default", Name: "inside"}
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetName("inside")
	obj.SetLabels(map[string]string{"app": "x"})
	if _, _, err := r.Create(t.Context(), Ref{Resource: configMaps, Namespace: "default"}, obj, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, w, watch.Added, "inside")
	wantPause(t, w)

	stored, err := r.Get(t.Context(), ref, &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obj, _ = storedobj.DecodeStored(stored.Value)
	obj.SetLabels(map[string]string{"app": "y"})
	updated, _, err := r.Update(t.Context(), ref, obj, &metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	left := wantEvent(t, w, watch.Deleted, "inside")
	if left.Labels["app"] != "x" || left.ResourceVersion != revisionString(updated.Revision) {
		t.Errorf("the object leaving the selection: labels %v at %s, want app=x at %d", left.Labels, left.ResourceVersion, updated.Revision)
	}
}

// Wake ends a wait without an event; Stop ends the watch.
func TestWatchWakesAndStops(t *testing.T) {
	r := newTestRegistry(t, openTestStore(t, sqltest.SQLiteDSN(t)))
	w := startWatch(t, r, &internalversion.ListOptions{Watch: true})
	wantPause(t, w)
	wake := make(chan time.Time, 1)
	wake <- time.Now()
	if ev, ok := w.Next(wake); ok || w.Done() {
		t.Fatalf("woken: event %+v, done %t", ev, w.Done())
	}
	w.Stop()
	if _, ok := w.Next(nil); ok || !w.Done() {
		t.Fatal("a stopped watch goes on")
	}
}

func startWatch(t *testing.T, r *Registry, opts *internalversion.ListOptions) *Watch {
	t.Helper()
	_, configMaps := testTypes()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	w, err := r.Watch(ctx, Ref{Resource: configMaps, Namespace: "default"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// wantEvent takes the watch's next event, which must be of eventType about name, and returns
// its object's metadata.
func wantEvent(t *testing.T, w *Watch, eventType watch.EventType, name string) metav1.ObjectMeta {
	t.Helper()
	ev, ok := w.Next(nil)
	if !ok || ev.Type != eventType {
		t.Fatalf("event %s %s, ok %t, err %v; want %s", ev.Type, ev.Object, ok, ev.Err, eventType)
	}
	var obj storedobj.MetadataOnly
	if err := json.Unmarshal(ev.Object, &obj); err != nil {
		t.Fatal(err)
	}
	if obj.Metadata.Name != name {
		t.Fatalf("%s event about %q, want %q", eventType, obj.Metadata.Name, name)
	}
	return obj.Metadata
}

// wantPause: the watch has nothing ready, and has not ended.
func wantPause(t *testing.T, w *Watch) {
	t.Helper()
	if ev, ok := w.Next(nil); ok || w.Done() {
		t.Fatalf("event %s %s, done %t; want a pause", ev.Type, ev.Object, w.Done())
	}
}

func mustParseRevision(t *testing.T, rv string) int64 {
	t.Helper()
	revision, err := ParseResourceVersion(rv)
	if err != nil {
		t.Fatal(err)
	}
	return revision
}
