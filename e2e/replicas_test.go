package e2e

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// TestReplicasShareOnePostgreSQL runs two processes on one PostgreSQL database, as
// docker-compose.yaml does: what one writes the other serves, watches on one see the other's
// writes, and optimistic concurrency holds across them. (Replicas are a PostgreSQL feature: a
// SQLite file belongs to one process.)
func TestReplicasShareOnePostgreSQL(t *testing.T) {
	dsn := sqltest.PostgresDSN(t)
	a := startServer(t, dsn)
	b := startServer(t, dsn) // the second start finds the schema and the initial namespaces there
	onA, onB := a.clientset().CoreV1().ConfigMaps("default"), b.clientset().CoreV1().ConfigMaps("default")

	w, err := onB.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch on b: %v", err)
	}
	defer w.Stop()

	created, err := onA.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create on a: %v", err)
	}
	assertGet(t, onB, "shared", created)
	expectEvent(t, w, watch.Added, created)

	changed := created.DeepCopy()
	changed.Data["v"] = "2"
	updated, err := onB.Update(ctx, changed, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update on b: %v", err)
	}
	expectEvent(t, w, watch.Modified, updated)
	stale := created.DeepCopy()
	stale.Data["v"] = "stale"
	_, err = onA.Update(ctx, stale, metav1.UpdateOptions{})
	assertAPIError(t, err, conflictOnStale(configMaps, "shared"))

	checkInterleavedWrites(t, a, b)
}

// checkInterleavedWrites writes through both replicas at once and checks they list the same
// objects.
func checkInterleavedWrites(t *testing.T, a, b *sqlkubeServer) {
	t.Helper()
	createNamespace(t, a.clientset(), "e2e-replicas")
	both := map[string]*corev1.ConfigMap{}
	done := make(chan map[string]*corev1.ConfigMap)
	go func() { done <- writeConcurrently(t, b, "e2e-replicas", "from-b", 20) }()
	for name, cm := range writeConcurrently(t, a, "e2e-replicas", "from-a", 20) {
		both[name] = cm
	}
	for name, cm := range <-done {
		both[name] = cm
	}
	assertConfigMaps(t, a, "e2e-replicas", both)
	assertConfigMaps(t, b, "e2e-replicas", both)
}

// expectEvent waits for the next event on w about want's name and checks it, skipping events
// about other objects.
func expectEvent(t *testing.T, w watch.Interface, wantType watch.EventType, want *corev1.ConfigMap) {
	t.Helper()
	for {
		ev := nextEvent(t, w, want.Name)
		if got, ok := ev.Object.(*corev1.ConfigMap); ok && got.Name == want.Name {
			checkEvent(t, ev, wantType, want)
			return
		}
	}
}

// expectNextEvent checks that the next event on w is wantType for want.
func expectNextEvent(t *testing.T, w watch.Interface, wantType watch.EventType, want *corev1.ConfigMap) {
	t.Helper()
	checkEvent(t, nextEvent(t, w, want.Name), wantType, want)
}

func nextEvent(t *testing.T, w watch.Interface, waitingFor string) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch closed while waiting for an event about %s", waitingFor)
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatalf("no event about %s within 10s", waitingFor)
		return watch.Event{}
	}
}

func checkEvent(t *testing.T, ev watch.Event, wantType watch.EventType, want *corev1.ConfigMap) {
	t.Helper()
	got, ok := ev.Object.(*corev1.ConfigMap)
	if !ok || ev.Type != wantType || !cmp.Equal(got, want) {
		t.Fatalf("event %s %T, want %s %s (-want +got):\n%s", ev.Type, ev.Object, wantType, want.Name, cmp.Diff(want, ev.Object))
	}
}
