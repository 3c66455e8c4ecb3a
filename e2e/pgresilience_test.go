package e2e

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// requestTimeout is the client's bound on every request in these tests: a request to a server
// whose database is gone must get an answer, not hang.
const requestTimeout = 10 * time.Second

// TestPostgresBackendsTerminatedUnderLoad ends every connection of the test database (pools and
// LISTEN alike, as a PostgreSQL restart would), twice, while writers create configmaps through
// two replicas and a watcher that resumes every second follows each. Failed writes must be Status
// answers, the replicas must become ready again by themselves, every acknowledged write must be
// stored, and every watcher must see each stored object exactly once, in revision order.
func TestPostgresBackendsTerminatedUnderLoad(t *testing.T) {
	dsn, replicas := startReplicas(t, 2)
	const namespace = "load"
	createNamespace(t, replicas[0].clientset(), namespace)
	start := listRevision(t, replicas[0])
	var watchers []<-chan watchResult
	var resumers []*resumingWatcher
	for _, s := range replicas {
		w, r := resumeWatch(t, s, namespace, start)
		watchers, resumers = append(watchers, w), append(resumers, r)
	}

	admin := openAdmin(t, dsn)
	load := startCreateLoad(t, replicas, namespace, 16)
	for outage := range 2 {
		load.waitAcknowledged(t, 100*(outage+1))
		opened := watchesOpened(resumers)
		ended, at := terminateBackends(t, admin), time.Now()
		waitReady(t, replicas)
		t.Logf("outage %d: ended %d connections; replicas ready again within %v", outage, ended, time.Since(at))
		waitResumed(t, resumers, opened)
	}
	load.waitAcknowledged(t, 300)
	acknowledged := load.stop()
	createMarker(t, replicas[1], namespace)

	stored := checkAcknowledgedStored(t, replicas, namespace, acknowledged)
	checkLogs(t, namespace, watchers, addedInRevisionOrder(t, stored))
	t.Logf("%d writes acknowledged, failures by code %v (%d of those committed all the same); watches opened: %v, refused: %d",
		len(acknowledged), load.failuresByCode(), committedUnacknowledged(t, stored, acknowledged, load.failed),
		watchesOpened(resumers), checkRefusedWatches(t, resumers))
}

// TestPostgresUnreachable cuts the server off PostgreSQL for a while, through a proxy that ends
// every connection and refuses new ones: requests must get a 500 or 503 Status in time, /readyz
// must answer not ready, watches resumed meanwhile must not lose their place, and the server must
// recover by itself once the database is back.
func TestPostgresUnreachable(t *testing.T) {
	proxy := startPostgresProxy(t, sqltest.PostgresDSN(t))
	s := startServer(t, proxy.dsn)
	replicas := []*sqlkubeServer{s}
	const namespace = "outage"
	createNamespace(t, s.clientset(), namespace)
	watcher, resumer := resumeWatch(t, s, namespace, listRevision(t, s))
	acknowledged := writeConcurrently(t, s, namespace, "before", 20)

	proxy.setReachable(false)
	checkUnavailable(t, s, namespace, resumer)
	proxy.setReachable(true)
	waitReady(t, replicas)

	maps.Copy(acknowledged, writeConcurrently(t, s, namespace, "after", 20))
	createMarker(t, s, namespace)
	stored := checkAcknowledgedStored(t, replicas, namespace, acknowledged)
	if len(stored) != len(acknowledged)+1 {
		t.Errorf("%d configmaps stored, want the %d acknowledged and the marker", len(stored), len(acknowledged))
	}
	checkLogs(t, namespace, []<-chan watchResult{watcher}, addedInRevisionOrder(t, stored))
	t.Logf("watches opened: %d, refused: %d", resumer.opened.Load(), checkRefusedWatches(t, []*resumingWatcher{resumer}))
}

// checkUnavailable checks what a server whose database refuses connections answers: /readyz not
// ready, and a Status for consistent reads and writes. It holds the outage until the watcher has
// resumed twice, so that resumption meets it.
func checkUnavailable(t *testing.T, s *sqlkubeServer, namespace string, resumer *resumingWatcher) {
	t.Helper()
	eventually(t, requestTimeout, "/readyz not ready", func() (bool, error) { return readyNow(s) != nil, nil })
	cms := timingOutClient(t, s).CoreV1().ConfigMaps(namespace)
	_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "during"}}, metav1.CreateOptions{})
	checkFailedInOutage(t, "create", err)
	_, err = cms.Get(ctx, "before-000", metav1.GetOptions{})
	checkFailedInOutage(t, "get", err)
	_, err = cms.List(ctx, metav1.ListOptions{})
	checkFailedInOutage(t, "list", err)

	resumed := resumer.opened.Load()
	eventually(t, 10*time.Second, "the watcher resumed twice during the outage", func() (bool, error) {
		return resumer.opened.Load() >= resumed+2, nil
	})
	if err := readyNow(s); err == nil {
		t.Error("/readyz ready while the database refuses connections")
	}
}

// checkFailedInOutage fails unless err is the 500 or 503 Status of a database outage.
func checkFailedInOutage(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s succeeded while the database refuses connections", what)
		return
	}
	t.Logf("%s during the outage: %v", what, err)
	checkOutageError(t, what, err)
}

// createLoad is writers creating configmaps until stopped, noting what was acknowledged.
type createLoad struct {
	t            *testing.T
	done         chan struct{}
	wg           sync.WaitGroup
	mu           sync.Mutex
	acknowledged map[string]*corev1.ConfigMap
	failed       map[string]int32 // the status code of each failed write, by name
}

// startCreateLoad starts writers creating configmaps in namespace, writer w through replica
// w%len(replicas), with requestTimeout on each request.
func startCreateLoad(t *testing.T, replicas []*sqlkubeServer, namespace string, writers int) *createLoad {
	l := &createLoad{t: t, done: make(chan struct{}), acknowledged: map[string]*corev1.ConfigMap{}, failed: map[string]int32{}}
	for w := range writers {
		cms := timingOutClient(t, replicas[w%len(replicas)]).CoreV1().ConfigMaps(namespace)
		l.wg.Go(func() { l.write(cms, w) })
	}
	return l
}

// write creates configmaps under new names until stopped; a write that fails is not retried,
// as its outcome is unknown.
func (l *createLoad) write(cms typedcorev1.ConfigMapInterface, writer int) {
	for i := 0; ; i++ {
		select {
		case <-l.done:
			return
		default:
		}
		name := fmt.Sprintf("w%02d-%05d", writer, i)
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		code := checkOutageError(l.t, "create "+name, err)
		l.mu.Lock()
		if err == nil {
			l.acknowledged[name] = cm
		} else {
			l.failed[name] = code
		}
		l.mu.Unlock()
	}
}

// waitAcknowledged waits until n writes in all have been acknowledged.
func (l *createLoad) waitAcknowledged(t *testing.T, n int) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("%d writes acknowledged", n), func() (bool, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.acknowledged) >= n, nil
	})
}

// stop ends the writers and returns the acknowledged writes, by name.
func (l *createLoad) stop() map[string]*corev1.ConfigMap {
	close(l.done)
	l.wg.Wait()
	return l.acknowledged
}

// failuresByCode counts the failed writes by status code, once the load has stopped.
func (l *createLoad) failuresByCode() map[int32]int {
	counts := map[int32]int{}
	for _, code := range l.failed {
		counts[code]++
	}
	return counts
}

// committedUnacknowledged checks that every stored object but the marker is a write of the load,
// acknowledged or failed, and returns how many failed writes were committed all the same: a
// connection lost during a commit leaves its outcome unknown to the server.
func committedUnacknowledged(t *testing.T, stored []corev1.ConfigMap, acknowledged map[string]*corev1.ConfigMap, failed map[string]int32) int {
	t.Helper()
	n := 0
	for _, cm := range stored {
		_, acked := acknowledged[cm.Name]
		_, attempted := failed[cm.Name]
		switch {
		case attempted:
			n++
		case !acked && cm.Name != markerName:
			t.Errorf("stored %s was never written", cm.Name)
		}
	}
	return n
}

// timingOutClient is a clientset for s whose requests give up after requestTimeout.
func timingOutClient(t *testing.T, s *sqlkubeServer) kubernetes.Interface {
	t.Helper()
	config := s.restConfig()
	config.Timeout = requestTimeout
	c, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkOutageError fails unless err is nil or the answer of a server that lost its database: a
// Status with 500 or 503, not a timeout (a hung request) or a broken connection. It returns the
// Status code (0 for other errors and success).
func checkOutageError(t *testing.T, what string, err error) int32 {
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return 0
	case !errors.As(err, &status):
		t.Errorf("%s: %v (%T), want a 500 or 503 Status", what, err, err)
		return 0
	}
	code := status.Status().Code
	if code != http.StatusInternalServerError && code != http.StatusServiceUnavailable {
		t.Errorf("%s: %d %v, want a 500 or 503 Status", what, code, err)
	}
	return code
}

// checkAcknowledgedStored lists namespace on every replica and checks that each holds every
// acknowledged write exactly as acknowledged; it returns the objects listed. Writes that failed
// may be there too: a connection lost during a commit leaves its outcome unknown to the server.
func checkAcknowledgedStored(t *testing.T, replicas []*sqlkubeServer, namespace string, acknowledged map[string]*corev1.ConfigMap) []corev1.ConfigMap {
	t.Helper()
	var items []corev1.ConfigMap
	for i, s := range replicas {
		list, err := s.clientset().CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list on replica %d: %v", i, err)
		}
		list.Items = slices.DeleteFunc(list.Items, func(cm corev1.ConfigMap) bool { return serverOwned(&cm) })
		listed := map[string]corev1.ConfigMap{}
		for _, cm := range list.Items {
			cm.TypeMeta = metav1.TypeMeta{}
			listed[cm.Name] = cm
		}
		for name, want := range acknowledged {
			if got, ok := listed[name]; !ok || got.ResourceVersion != want.ResourceVersion || got.UID != want.UID {
				t.Errorf("replica %d lists %s as %+v, want it as acknowledged at resourceVersion %s", i, name, got.ObjectMeta, want.ResourceVersion)
			}
		}
		items = list.Items
	}
	return items
}

// addedInRevisionOrder is the log a watcher of a namespace that only saw creates must have seen:
// one ADDED event per object, in revision order.
func addedInRevisionOrder(t *testing.T, objects []corev1.ConfigMap) []logged {
	t.Helper()
	slices.SortFunc(objects, func(a, b corev1.ConfigMap) int { return cmp.Compare(revision(t, &a), revision(t, &b)) })
	var events []logged
	for _, cm := range objects {
		if cm.Name != markerName {
			events = append(events, logged{watch.Added, cm.Namespace + "/" + cm.Name, cm.ResourceVersion})
		}
	}
	return events
}

// resumingWatcher is the configmaps of one namespace as client-go's RetryWatcher watches them.
// Each stream asks the server to end it after a second, so that the client resumes from its last
// resourceVersion again and again, during outages too. It counts the watches opened and keeps
// the errors of those the server refused, for the test to check once the watcher has stopped.
type resumingWatcher struct {
	cms    typedcorev1.ConfigMapInterface
	opened atomic.Int64

	mu      sync.Mutex
	refused []error
}

func (r *resumingWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	r.opened.Add(1)
	opts.TimeoutSeconds = ptr.To[int64](1)
	w, err := r.cms.Watch(ctx, opts)
	if err != nil && ctx.Err() == nil {
		r.mu.Lock()
		r.refused = append(r.refused, err)
		r.mu.Unlock()
	}
	return w, err
}

// checkRefusedWatches checks that every watch the servers refused got a 500 or 503 Status.
func checkRefusedWatches(t *testing.T, resumers []*resumingWatcher) (refused int) {
	t.Helper()
	for _, r := range resumers {
		r.mu.Lock()
		for _, err := range r.refused {
			checkOutageError(t, "watch", err)
		}
		refused += len(r.refused)
		r.mu.Unlock()
	}
	return refused
}

// resumeWatch follows namespace on s from resourceVersion with a RetryWatcher, which re-watches
// from the last event's resourceVersion whenever a stream ends, and collects the events until
// the marker.
func resumeWatch(t *testing.T, s *sqlkubeServer, namespace, resourceVersion string) (<-chan watchResult, *resumingWatcher) {
	t.Helper()
	// No request timeout here: it would end healthy watches. The marker's deadline bounds them.
	r := &resumingWatcher{cms: s.clientset().CoreV1().ConfigMaps(namespace)}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, resourceVersion, r)
	if err != nil {
		t.Fatal(err)
	}
	return collectUntilMarker(w, namespace+"/"+markerName), r
}

// waitResumed waits until every watcher has opened a watch since it had opened[i], so that each
// resumes while the load goes on after an outage.
func waitResumed(t *testing.T, resumers []*resumingWatcher, opened []int64) {
	t.Helper()
	eventually(t, 10*time.Second, "every watcher resumed", func() (bool, error) {
		for i, r := range resumers {
			if r.opened.Load() <= opened[i] {
				return false, nil
			}
		}
		return true, nil
	})
}

func watchesOpened(resumers []*resumingWatcher) []int64 {
	var opened []int64
	for _, r := range resumers {
		opened = append(opened, r.opened.Load())
	}
	return opened
}

// listRevision is the resourceVersion of a list of all configmaps on s.
func listRevision(t *testing.T, s *sqlkubeServer) string {
	t.Helper()
	list, err := s.clientset().CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	return list.ResourceVersion
}

// waitReady waits until every replica answers /readyz with 200 again, without a restart.
func waitReady(t *testing.T, replicas []*sqlkubeServer) {
	t.Helper()
	for i, s := range replicas {
		eventually(t, 30*time.Second, fmt.Sprintf("replica %d ready", i), func() (bool, error) {
			err := readyNow(s)
			return err == nil, err
		})
	}
}

// readyNow is s's /readyz answer, nil when ready; it must come within requestTimeout.
func readyNow(s *sqlkubeServer) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return probeReady(ctx, s.URL())
}

// openAdmin opens one connection to dsn's database, kept for the test: the one connection
// terminateBackends spares.
func openAdmin(t *testing.T, dsn string) *sql.Conn {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatalf("connecting to the test database: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// terminateBackends ends every other connection to the database and returns how many it ended.
func terminateBackends(t *testing.T, admin *sql.Conn) int {
	t.Helper()
	var n int
	if err := admin.QueryRowContext(ctx, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()").Scan(&n); err != nil {
		t.Fatalf("terminating backends: %v", err)
	}
	return n
}

// postgresProxy forwards TCP connections to PostgreSQL. While unreachable it has ended every
// forwarded connection and ends new ones as soon as they are accepted, which is what a client
// sees of a database that went away, without touching the PostgreSQL server other tests share.
type postgresProxy struct {
	dsn    string // the database, through the proxy
	target string // PostgreSQL's address
	ln     net.Listener

	mu          sync.Mutex
	unreachable bool
	conns       map[net.Conn]bool
}

// startPostgresProxy listens on a loopback port for dsn's server and returns it, with a DSN of
// dsn's database through it. It stops when the test ends.
func startPostgresProxy(t *testing.T, dsn string) *postgresProxy {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &postgresProxy{target: u.Host, ln: ln, conns: map[net.Conn]bool{}}
	u.Host = ln.Addr().String()
	p.dsn = u.String()
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.setReachable(false)
	})
	return p
}

func (p *postgresProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed at the end of the test
		}
		go p.forward(client)
	}
}

// forward copies between client and a new connection to PostgreSQL until either side ends.
func (p *postgresProxy) forward(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil || !p.track(client, server) {
		client.Close()
		if server != nil {
			server.Close()
		}
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	p.untrack(client, server)
}

// track registers a forwarded pair, unless the database is unreachable.
func (p *postgresProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.unreachable {
		return false
	}
	for _, c := range conns {
		p.conns[c] = true
	}
	return true
}

// untrack closes a pair, which also ends its other copy.
func (p *postgresProxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		c.Close()
		delete(p.conns, c)
	}
}

// setReachable lets connections through again, or ends them all and refuses new ones.
func (p *postgresProxy) setReachable(reachable bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unreachable = !reachable
	if p.unreachable {
		for c := range p.conns {
			c.Close()
		}
	}
}
