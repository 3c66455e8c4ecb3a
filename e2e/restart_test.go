package e2e

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestKillAndRestart checks that every acknowledged write survives a kill -9, with its
// resourceVersion, and that a restart on the same database (migrations already applied) serves
// them again.
func TestKillAndRestart(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		createNamespace(t, s.clientset(), "e2e-restart")
		acknowledged := writeConcurrently(t, s, "e2e-restart", "cm", 40)

		s.kill()
		s.restart()
		assertConfigMaps(t, s, "e2e-restart", acknowledged)

		s.stop()
		s.restart()
		assertConfigMaps(t, s, "e2e-restart", acknowledged)
		checkWatchReplaysHistory(t, s, acknowledged)
		checkRevisionsKeepGrowing(t, s, acknowledged)
	})
}

// checkWatchReplaysHistory watches from the oldest acknowledged revision, after restarts, and
// expects every later write once, in revision order.
func checkWatchReplaysHistory(t *testing.T, s *sqlkubeServer, acknowledged map[string]*corev1.ConfigMap) {
	t.Helper()
	byRevision := slices.SortedFunc(maps.Values(acknowledged), func(a, b *corev1.ConfigMap) int {
		return cmp.Compare(revision(t, a), revision(t, b))
	})
	w, err := s.clientset().CoreV1().ConfigMaps("e2e-restart").Watch(ctx, metav1.ListOptions{ResourceVersion: byRevision[0].ResourceVersion})
	if err != nil {
		t.Fatalf("watch from revision %s: %v", byRevision[0].ResourceVersion, err)
	}
	defer w.Stop()
	for _, want := range byRevision[1:] {
		expectNextEvent(t, w, watch.Added, want)
	}
}

// checkRevisionsKeepGrowing checks that a write after restarts gets a revision above every
// revision acknowledged before them.
func checkRevisionsKeepGrowing(t *testing.T, s *sqlkubeServer, before map[string]*corev1.ConfigMap) {
	t.Helper()
	after, err := s.clientset().CoreV1().ConfigMaps("e2e-restart").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create after restart: %v", err)
	}
	for _, cm := range before {
		if revision(t, after) <= revision(t, cm) {
			t.Errorf("revision %s after restart is not above %s (%s) acknowledged before", after.ResourceVersion, cm.ResourceVersion, cm.Name)
		}
	}
}

// writeConcurrently creates n configmaps named prefix-NNN from several clients at once (so that
// writes share commits) and returns what the server acknowledged, by name.
func writeConcurrently(t *testing.T, s *sqlkubeServer, namespace, prefix string, n int) map[string]*corev1.ConfigMap {
	cms := s.clientset().CoreV1().ConfigMaps(namespace)
	var mu sync.Mutex
	acknowledged := map[string]*corev1.ConfigMap{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("%s-%03d", prefix, i)
			cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": name}}, metav1.CreateOptions{})
			if err != nil {
				t.Errorf("create %s: %v", name, err)
				return
			}
			mu.Lock()
			acknowledged[name] = cm
			mu.Unlock()
		}()
	}
	wg.Wait()
	return acknowledged
}

// assertConfigMaps checks that namespace holds exactly the objects in want: data, uid,
// creationTimestamp, resourceVersion and the rest of their metadata.
func assertConfigMaps(t *testing.T, s *sqlkubeServer, namespace string, want map[string]*corev1.ConfigMap) {
	t.Helper()
	list, err := s.clientset().CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list after restart: %v", err)
	}
	list.Items = slices.DeleteFunc(list.Items, func(cm corev1.ConfigMap) bool { return serverOwned(&cm) })
	if len(list.Items) != len(want) {
		t.Errorf("%d configmaps after restart, want %d", len(list.Items), len(want))
	}
	for i := range list.Items {
		got := &list.Items[i]
		// Only what was stored matters here: list items' type metadata is TestTypedClientCRUD's.
		got.TypeMeta = metav1.TypeMeta{}
		if diff := gocmp.Diff(want[got.Name], got); diff != "" {
			t.Errorf("configmap %s after restart (-acknowledged +listed):\n%s", got.Name, diff)
		}
	}
}
