package e2e

import (
	"cmp"
	"database/sql"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	_ "github.com/jackc/pgx/v5/stdlib" // "pgx" database/sql driver, to tamper with a test database
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	_ "modernc.org/sqlite" // "sqlite" database/sql driver, to tamper with a test database

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
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

// TestStartTwiceOnOneSQLiteFile checks that migrations are a no-op on a database that has them.
func TestStartTwiceOnOneSQLiteFile(t *testing.T) {
	dsn := sqltest.SQLiteDSN(t)
	s := startServer(t, dsn)
	createNamespace(t, s.clientset(), "kept")
	s.stop()
	s.restart()
	if _, err := s.clientset().CoreV1().Namespaces().Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace after a second start: %v", err)
	}
}

// TestNewerSchemaIsRefused checks that a binary refuses a database migrated by a newer one.
func TestNewerSchemaIsRefused(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		s := startServer(t, dsn)
		s.stop()
		bumpSchemaVersion(t, dsn, 9999)

		code, out := runToExit(t, nil, "--listen=127.0.0.1:0", "--db="+dsn)
		if code == 0 || !strings.Contains(out, "database schema version 9999 is newer than this sqlkube supports") {
			t.Fatalf("start on a newer schema: exit %d, output:\n%s\nwant a non-zero exit saying the schema is newer", code, out)
		}
	})
}

// bumpSchemaVersion sets golang-migrate's recorded schema version, as a newer binary would.
func bumpSchemaVersion(t *testing.T, dsn string, version int) {
	t.Helper()
	driver, source := "pgx", dsn
	if path, ok := strings.CutPrefix(dsn, "sqlite://"); ok {
		driver, source = "sqlite", path
	}
	db, err := sql.Open(driver, source)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.ExecContext(ctx, fmt.Sprintf("UPDATE schema_migrations SET version = %d", version))
	if err != nil {
		t.Fatalf("bump schema version: %v", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("bump schema version: %d rows in schema_migrations, want 1", n)
	}
}

// TestStartupErrors checks that bad configuration ends the process with a clear message.
func TestStartupErrors(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"unknown database scheme", []string{"--db=mysql://localhost/kube"}, nil,
			`unsupported database scheme "mysql": accepted schemes are sqlite://, postgres:// and postgresql://`},
		{"unknown scheme from the environment", nil, []string{"SQLKUBE_DB=oracle://x"}, `unsupported database scheme "oracle"`},
		{"bad flag value", []string{"--retention=forever"}, nil, `invalid argument "forever" for "--retention"`},
		{"unreachable PostgreSQL", []string{"--db=postgres://postgres@127.0.0.1:1/nope?sslmode=disable"}, nil,
			"sqlkube: open database: connecting to PostgreSQL at 127.0.0.1:1"},
		{"SQLite in a missing directory", []string{"--db=sqlite:///nonexistent-dir/x.db"}, nil,
			"sqlkube: open database: opening SQLite database /nonexistent-dir/x.db"},
		{"port taken", []string{"--listen=" + taken.Addr().String(), "--db=sqlite://" + filepath.Join(t.TempDir(), "x.db")}, nil,
			"sqlkube: listen on " + taken.Addr().String()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out := runToExit(t, tc.env, append([]string{"--listen=127.0.0.1:0"}, tc.args...)...) // a later --listen wins
			if code == 0 || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, output:\n%s\nwant a non-zero exit mentioning %q", code, out, tc.want)
			}
		})
	}
}
