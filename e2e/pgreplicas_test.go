package e2e

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// logged is one watch event as the log comparisons see it.
type logged struct {
	Type            watch.EventType
	Key             string // namespace/name
	ResourceVersion string
}

// markerName is the configmap a test writes after its load: a watcher has seen everything before
// it once the marker arrives, so counts can be exact without waiting for silence.
const markerName = "marker"

// startReplicas starts n processes on one fresh PostgreSQL database.
func startReplicas(t *testing.T, n int) (dsn string, replicas []*sqlkubeServer) {
	t.Helper()
	dsn = sqltest.PostgresDSN(t)
	for range n {
		replicas = append(replicas, startServer(t, dsn))
	}
	return dsn, replicas
}

// TestThreeReplicas runs three processes on one PostgreSQL database and checks the guarantees
// that must hold across them: one log seen identically by every watcher, exact optimistic
// concurrency, and reads that see every write acknowledged before them.
func TestThreeReplicas(t *testing.T) {
	_, replicas := startReplicas(t, 3)
	t.Run("watchers see one log", func(t *testing.T) { checkWatchersSeeOneLog(t, replicas) })
	t.Run("one conflicting update wins", func(t *testing.T) { checkOneConflictingUpdateWins(t, replicas[0], replicas[1]) })
	t.Run("reads see writes of other replicas", func(t *testing.T) { checkReadYourWrites(t, replicas) })
	t.Run("cross-replica watch latency", func(t *testing.T) { measureWatchLatency(t, replicas[0], replicas[1]) })
}

// checkWatchersSeeOneLog has 50 writers spread over the replicas create, update and delete
// configmaps in a few namespaces, while every replica serves a watch of all namespaces and one
// of a single namespace, all started from one list's resourceVersion. Every watcher must see
// the same events, in revision order, each acknowledged write exactly once.
func checkWatchersSeeOneLog(t *testing.T, replicas []*sqlkubeServer) {
	namespaces := []string{"log-0", "log-1", "log-2", "log-3"}
	for _, ns := range namespaces {
		createNamespace(t, replicas[0].clientset(), ns)
	}
	list, err := replicas[0].clientset().CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var all, one []<-chan watchResult
	for _, s := range replicas {
		all = append(all, collectWatch(t, s.clientset().CoreV1().ConfigMaps(""), list.ResourceVersion, namespaces[0]+"/"+markerName))
		one = append(one, collectWatch(t, s.clientset().CoreV1().ConfigMaps(namespaces[0]), list.ResourceVersion, namespaces[0]+"/"+markerName))
	}

	acknowledged := writeCreateUpdateDelete(t, replicas, namespaces, 50, 2)
	createMarker(t, replicas[2], namespaces[0])

	reference := checkLogs(t, "all namespaces", all, nil)
	checkLogs(t, namespaces[0], one, inNamespace(reference, namespaces[0]))
	checkStrictlyIncreasing(t, reference)
	if diff := gocmp.Diff(byKey(acknowledged), byKey(withoutDeleteRevisions(reference))); diff != "" {
		t.Errorf("watched events differ from the acknowledged writes (-acknowledged +watched):\n%s", diff)
	}
	t.Logf("%d writes, each seen once, in order, by %d watchers", len(acknowledged), len(all)+len(one))
}

// writeCreateUpdateDelete runs writers goroutines, writer w on replica w%len(replicas), each
// doing rounds of create, update and delete of its own configmap. It returns the acknowledged
// writes; a delete's revision is not in its answer (a Status), so deletes have none.
func writeCreateUpdateDelete(t *testing.T, replicas []*sqlkubeServer, namespaces []string, writers, rounds int) []logged {
	t.Helper()
	var mu sync.Mutex
	var acknowledged []logged
	var wg sync.WaitGroup
	for w := range writers {
		cms := replicas[w%len(replicas)].clientset().CoreV1().ConfigMaps(namespaces[w%len(namespaces)])
		wg.Go(func() {
			for r := range rounds {
				writes, err := createUpdateDelete(cms, fmt.Sprintf("w%02d-r%d", w, r))
				mu.Lock()
				acknowledged = append(acknowledged, writes...)
				mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return acknowledged
}

// createUpdateDelete writes name three times and returns the writes acknowledged.
func createUpdateDelete(cms typedcorev1.ConfigMapInterface, name string) ([]logged, error) {
	created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	writes := []logged{{watch.Added, created.Namespace + "/" + name, created.ResourceVersion}}
	created.Data["v"] = "2"
	updated, err := cms.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return writes, fmt.Errorf("update %s: %w", name, err)
	}
	writes = append(writes, logged{watch.Modified, updated.Namespace + "/" + name, updated.ResourceVersion})
	if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return writes, fmt.Errorf("delete %s: %w", name, err)
	}
	return append(writes, logged{watch.Deleted, updated.Namespace + "/" + name, ""}), nil
}

func createMarker(t *testing.T, s *sqlkubeServer, namespace string) {
	t.Helper()
	if _, err := s.clientset().CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: markerName}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the marker: %v", err)
	}
}

// watchResult is what a watcher saw before the marker, or why it stopped early.
type watchResult struct {
	events []logged
	err    error
}

// collectWatch watches from resourceVersion and collects events in the background until the
// marker (namespace/name) arrives.
func collectWatch(t *testing.T, cms typedcorev1.ConfigMapInterface, resourceVersion, marker string) <-chan watchResult {
	t.Helper()
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: resourceVersion})
	if err != nil {
		t.Fatalf("watch from %s: %v", resourceVersion, err)
	}
	return collectUntilMarker(w, marker)
}

// markerTimeout bounds how long a watcher may take to reach the marker once the writes that
// precede it have all been acknowledged, with room for resumption after a database outage.
const markerTimeout = 30 * time.Second

// collectUntilMarker reads w's events in the background until the marker arrives.
func collectUntilMarker(w watch.Interface, marker string) <-chan watchResult {
	out := make(chan watchResult, 1)
	go func() {
		var events []logged
		err := readUntilMarker(w, marker, func(e logged, _ time.Time) { events = append(events, e) })
		out <- watchResult{events, err}
	}()
	return out
}

// readUntilMarker passes w's events and their arrival times to seen until the marker arrives,
// then stops w. It fails if w closes, delivers an error, or shows no marker within markerTimeout.
func readUntilMarker(w watch.Interface, marker string, seen func(e logged, arrived time.Time)) error {
	defer w.Stop()
	deadline := time.After(markerTimeout)
	for n := 0; ; n++ {
		select {
		case ev, ok := <-w.ResultChan():
			arrived := time.Now()
			if !ok {
				return fmt.Errorf("watch closed after %d events, before the marker", n)
			}
			if serverOwned(ev.Object) {
				continue
			}
			e, err := loggedEvent(ev)
			if err != nil || e.Key == marker {
				return err
			}
			seen(e, arrived)
		case <-deadline:
			return fmt.Errorf("no marker within %s of the watch's start, after %d events", markerTimeout, n)
		}
	}
}

func loggedEvent(ev watch.Event) (logged, error) {
	if ev.Type == watch.Error {
		return logged{}, fmt.Errorf("watch error event: %v", ev.Object)
	}
	obj, err := meta.Accessor(ev.Object)
	if err != nil {
		return logged{}, fmt.Errorf("%s event with %T: %w", ev.Type, ev.Object, err)
	}
	return logged{ev.Type, obj.GetNamespace() + "/" + obj.GetName(), obj.GetResourceVersion()}, nil
}

// checkLogs waits for every watcher and checks that all saw the same events, equal to want when
// want is not nil. It returns the events seen.
func checkLogs(t *testing.T, what string, watchers []<-chan watchResult, want []logged) []logged {
	t.Helper()
	for i, w := range watchers {
		got := <-w
		if got.err != nil {
			t.Fatalf("%s watcher %d: %v", what, i, got.err)
		}
		if want == nil {
			want = got.events
		}
		if diff := gocmp.Diff(want, got.events); diff != "" {
			t.Errorf("%s watcher %d saw another log than watcher 0 (-0 +%d):\n%s", what, i, i, diff)
		}
	}
	return want
}

func checkStrictlyIncreasing(t *testing.T, events []logged) {
	t.Helper()
	var last uint64
	for _, e := range events {
		rv, err := strconv.ParseUint(e.ResourceVersion, 10, 64)
		if err != nil || rv <= last {
			t.Fatalf("event %+v after revision %d: want a strictly greater revision", e, last)
		}
		last = rv
	}
}

func inNamespace(events []logged, namespace string) []logged {
	return slices.DeleteFunc(slices.Clone(events), func(e logged) bool {
		return !strings.HasPrefix(e.Key, namespace+"/")
	})
}

// withoutDeleteRevisions blanks the revision of DELETED events, which the writers cannot
// compare: a delete answers a Status, not the object at its revision.
func withoutDeleteRevisions(events []logged) []logged {
	out := slices.Clone(events)
	for i := range out {
		if out[i].Type == watch.Deleted {
			out[i].ResourceVersion = ""
		}
	}
	return out
}

// byKey groups events by object, keeping their order.
func byKey(events []logged) map[string][]logged {
	out := map[string][]logged{}
	for _, e := range events {
		out[e.Key] = append(out[e.Key], e)
	}
	return out
}

// checkOneConflictingUpdateWins updates one configmap from two replicas at once, both from the
// same resourceVersion, round after round: exactly one update wins each round and the other gets
// the 409 Conflict kube-apiserver answers.
func checkOneConflictingUpdateWins(t *testing.T, a, b *sqlkubeServer) {
	createNamespace(t, a.clientset(), "conflicts")
	onA, onB := a.clientset().CoreV1().ConfigMaps("conflicts"), b.clientset().CoreV1().ConfigMaps("conflicts")
	current, err := onA.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "contended"}, Data: map[string]string{"round": "-1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	for round := range 30 {
		current = raceUpdates(t, current, round, onA, onB)
	}
	assertGet(t, onB, "contended", current)
}

// raceUpdates sends the same update of base from every client at once and returns the winner.
func raceUpdates(t *testing.T, base *corev1.ConfigMap, round int, clients ...typedcorev1.ConfigMapInterface) *corev1.ConfigMap {
	t.Helper()
	results := make([]*corev1.ConfigMap, len(clients))
	errs := make([]error, len(clients))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range clients {
		update := base.DeepCopy()
		update.Data = map[string]string{"round": strconv.Itoa(round), "client": strconv.Itoa(i)}
		wg.Go(func() {
			<-start
			results[i], errs[i] = c.Update(ctx, update, metav1.UpdateOptions{})
		})
	}
	close(start)
	wg.Wait()
	var winner *corev1.ConfigMap
	for i, err := range errs {
		switch {
		case err == nil && winner != nil:
			t.Fatalf("round %d: two updates from resourceVersion %s succeeded", round, base.ResourceVersion)
		case err == nil:
			winner = results[i]
		default:
			assertAPIError(t, err, conflictOnStale(configMaps, base.Name))
		}
	}
	if winner == nil {
		t.Fatalf("round %d: no update from resourceVersion %s succeeded", round, base.ResourceVersion)
	}
	return winner
}

// checkReadYourWrites writes through one replica and, as soon as the write is acknowledged,
// reads it with a consistent get and list (resourceVersion unset) through the next one.
func checkReadYourWrites(t *testing.T, replicas []*sqlkubeServer) {
	createNamespace(t, replicas[0].clientset(), "ryw")
	for i := range 30 {
		writer := replicas[i%len(replicas)].clientset().CoreV1().ConfigMaps("ryw")
		reader := replicas[(i+1)%len(replicas)].clientset().CoreV1().ConfigMaps("ryw")
		written := writeNext(t, writer, i)
		assertGet(t, reader, written.Name, written)
		assertListed(t, reader, written)
	}
}

// writeNext creates configmap ryw-i, or on odd rounds updates the previous round's, so that
// both kinds of write are read back.
func writeNext(t *testing.T, cms typedcorev1.ConfigMapInterface, i int) *corev1.ConfigMap {
	t.Helper()
	if i%2 == 1 {
		prev, err := cms.Get(ctx, fmt.Sprintf("ryw-%d", i-1), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		prev.Data = map[string]string{"updated": strconv.Itoa(i)}
		updated, err := cms.Update(ctx, prev, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		return updated
	}
	created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ryw-%d", i)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return created
}

// assertListed checks that a list holds want as written and is at or after its revision.
func assertListed(t *testing.T, cms typedcorev1.ConfigMapInterface, want *corev1.ConfigMap) {
	t.Helper()
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if listed, _ := strconv.ParseUint(list.ResourceVersion, 10, 64); listed < revision(t, want) {
		t.Errorf("list at resourceVersion %s, before the acknowledged write at %s", list.ResourceVersion, want.ResourceVersion)
	}
	for _, got := range list.Items {
		if got.Name == want.Name {
			got.TypeMeta = metav1.TypeMeta{}
			if diff := gocmp.Diff(want, &got); diff != "" {
				t.Errorf("listed %s (-written +listed):\n%s", want.Name, diff)
			}
			return
		}
	}
	t.Errorf("list at %s lacks %s written at %s", list.ResourceVersion, want.Name, want.ResourceVersion)
}

// measureWatchLatency creates configmaps on a at about 100 per second for three seconds while a
// watch on b notes when each one's event arrives, and logs the delivery latency from a's
// acknowledgement to b's event (zero when the event beats the acknowledgement). It asserts
// delivery, not timing: the figures are for docs/benchmarks.md.
func measureWatchLatency(t *testing.T, a, b *sqlkubeServer) {
	const namespace, writes, interval = "latency", 300, 10 * time.Millisecond
	createNamespace(t, a.clientset(), namespace)
	onB := b.clientset().CoreV1().ConfigMaps(namespace)
	w, err := onB.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch on b: %v", err)
	}
	arrivals := noteArrivals(w, namespace+"/"+markerName)
	acks := writePaced(t, a.clientset().CoreV1().ConfigMaps(namespace), writes, interval)
	createMarker(t, a, namespace)
	got := <-arrivals
	if got.err != nil {
		t.Fatal(got.err)
	}
	var latencies []time.Duration
	for name, acked := range acks {
		arrived, ok := got.at[namespace+"/"+name]
		if !ok {
			t.Fatalf("no event on b for %s acknowledged by a", name)
		}
		latencies = append(latencies, max(arrived.Sub(acked), 0))
	}
	slices.Sort(latencies)
	t.Logf("cross-replica watch latency over %d writes at %s intervals: p50 %v, p99 %v, max %v",
		len(latencies), interval, percentile(latencies, 0.50), percentile(latencies, 0.99), latencies[len(latencies)-1])
}

// writePaced starts one create every interval, each in its own goroutine so that a slow write
// does not delay the schedule, and returns when each was acknowledged, by name.
func writePaced(t *testing.T, cms typedcorev1.ConfigMapInterface, n int, interval time.Duration) map[string]time.Time {
	t.Helper()
	var mu sync.Mutex
	acks := map[string]time.Time{}
	var wg sync.WaitGroup
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := range n {
		<-tick.C
		wg.Go(func() {
			name := fmt.Sprintf("paced-%04d", i)
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
				t.Errorf("create %s: %v", name, err)
				return
			}
			mu.Lock()
			acks[name] = time.Now()
			mu.Unlock()
		})
	}
	wg.Wait()
	return acks
}

// arrivalTimes is when each object's first event arrived, by namespace/name.
type arrivalTimes struct {
	at  map[string]time.Time
	err error
}

// noteArrivals reads w in the background until the marker arrives, noting arrival times.
func noteArrivals(w watch.Interface, marker string) <-chan arrivalTimes {
	out := make(chan arrivalTimes, 1)
	go func() {
		at := map[string]time.Time{}
		err := readUntilMarker(w, marker, func(e logged, arrived time.Time) { at[e.Key] = arrived })
		out <- arrivalTimes{at, err}
	}()
	return out
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	return sorted[int(p*float64(len(sorted)-1))]
}
