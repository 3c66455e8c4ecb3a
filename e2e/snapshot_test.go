package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// snapshotCollections are the lists compared between a server and the one restored from its
// snapshot: built-in kinds, the server's own objects (service accounts, RBAC), a CRD and its
// custom resources.
var snapshotCollections = []string{
	"/api/v1/namespaces",
	"/api/v1/configmaps",
	"/api/v1/secrets",
	"/api/v1/serviceaccounts",
	"/apis/rbac.authorization.k8s.io/v1/clusterroles",
	"/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
	"/apis/e2e.example.com/v1/widgets",
}

// TestSnapshotMovesBetweenDatabases moves a cluster from SQLite to PostgreSQL while it takes
// writes, and back, checking that every object arrives byte for byte, resourceVersion, uid and
// creationTimestamp included, and that new writes continue above the snapshot's revision.
func TestSnapshotMovesBetweenDatabases(t *testing.T) {
	dir := t.TempDir()
	sqliteDSN := sqltest.SQLiteDSN(t)
	postgresDSN := sqltest.PostgresDSN(t)
	backDSN := sqltest.SQLiteDSN(t)
	// The servers share one certificate directory, as replicas do: the same CA, so that the
	// restored root CA ConfigMaps and tokens stay valid.
	onSQLite := startServer(t, sqliteDSN)
	certDirs.Store(postgresDSN, onSQLite.pkiDir)
	certDirs.Store(backDSN, onSQLite.pkiDir)
	populateForSnapshot(t, onSQLite, "first")

	toPostgres := filepath.Join(dir, "to-postgres.snapshot")
	revision := saveWhileWriting(t, onSQLite, toPostgres)
	restoreSnapshot(t, postgresDSN, toPostgres)
	onPostgres := startServer(t, postgresDSN)
	compareCollections(t, onSQLite, revision, onPostgres)
	checkWritesContinueAbove(t, onPostgres, revision)

	populateForSnapshot(t, onPostgres, "second")
	back := filepath.Join(dir, "back.snapshot")
	revision = saveWhileWriting(t, onPostgres, back)
	restoreSnapshot(t, backDSN, back)
	onSQLiteAgain := startServer(t, backDSN)
	compareCollections(t, onPostgres, revision, onSQLiteAgain)
	checkWritesContinueAbove(t, onSQLiteAgain, revision)
}

// populateForSnapshot creates a namespace of objects of several kinds, and the CRD.
func populateForSnapshot(t *testing.T, s *sqlkubeServer, name string) {
	t.Helper()
	cs := s.clientset()
	namespace := "snap-" + name
	createNamespace(t, cs, namespace)
	for i := range 20 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm-", i), Labels: map[string]string{"i": fmt.Sprint(i)}},
			Data: map[string]string{"key": strings.Repeat("v", i)}}
		if _, err := cs.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("secret-", i)}, Data: map[string][]byte{"token": {byte(i), 0, 0xff}}}
		if _, err := cs.CoreV1().Secrets(namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.apiextensions().ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "widgets."+e2eGroup, metav1.GetOptions{}); err != nil {
		createCRD(t, s, testCRD("widgets", "widget", "Widget", "wd", apiextensionsv1.NamespaceScoped))
	}
	for i := range 10 {
		obj := newCustomObject(widgets, "Widget", namespace, fmt.Sprint("widget-", i), map[string]any{"size": int64(i), "color": "red"})
		if _, err := s.dynamicClient().Resource(widgets).Namespace(namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// saveWhileWriting runs `sqlkube snapshot save` while a client keeps creating ConfigMaps, and
// returns the snapshot's revision from `sqlkube snapshot status`.
func saveWhileWriting(t *testing.T, s *sqlkubeServer, file string) int64 {
	t.Helper()
	namespace := "busy-" + strings.TrimSuffix(filepath.Base(file), ".snapshot")
	createNamespace(t, s.clientset(), namespace)
	var written atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("during-", i)}}
			if _, err := s.clientset().CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Errorf("write during the snapshot: %v", err)
				return
			}
			written.Add(1)
		}
	}()
	eventually(t, 30*time.Second, "writes under way", func() (bool, error) { return written.Load() >= 5, nil })
	code, out := runToExit(t, nil, "snapshot", "save", "--db", s.dsn, file)
	before := written.Load()
	eventually(t, 30*time.Second, "writes after the snapshot", func() (bool, error) { return written.Load() > before+5, nil })
	close(stop)
	wg.Wait()
	if code != 0 || !strings.HasPrefix(out, "Snapshot saved at "+file+": revision ") {
		t.Fatalf("snapshot save exited %d: %s", code, out)
	}
	return snapshotStatus(t, file).Revision
}

type snapshotStatusJSON struct {
	Hash          string `json:"hash"`
	Revision      int64  `json:"revision"`
	TotalKey      int64  `json:"totalKey"`
	TotalSize     int64  `json:"totalSize"`
	FormatVersion int    `json:"formatVersion"`
}

func snapshotStatus(t *testing.T, file string) snapshotStatusJSON {
	t.Helper()
	code, out := runToExit(t, nil, "snapshot", "status", "-w", "json", file)
	var status snapshotStatusJSON
	if err := json.Unmarshal([]byte(out), &status); code != 0 || err != nil {
		t.Fatalf("snapshot status exited %d (%v): %s", code, err, out)
	}
	info, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if status.TotalSize != info.Size() || len(status.Hash) != 64 || status.FormatVersion != 1 || status.TotalKey < 50 || status.Revision < status.TotalKey {
		t.Fatalf("snapshot status of a %d-byte file: %+v", info.Size(), status)
	}
	return status
}

func restoreSnapshot(t *testing.T, dsn, file string) {
	t.Helper()
	code, out := runToExit(t, nil, "snapshot", "restore", "--db", dsn, file)
	if code != 0 || !strings.HasPrefix(out, "Restored ") {
		t.Fatalf("snapshot restore exited %d: %s", code, out)
	}
}

// listAt lists path raw, at revision when it is not 0 (exactly), else at the latest revision.
func listAt(t *testing.T, s *sqlkubeServer, path string, revision int64) (items []json.RawMessage, listRevision string) {
	t.Helper()
	if revision != 0 {
		path += fmt.Sprintf("?resourceVersion=%d&resourceVersionMatch=Exact", revision)
	}
	resp := s.do(t, http.MethodGet, path, nil)
	if resp.code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.code, resp.body)
	}
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(resp.body, &list); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return list.Items, list.Metadata.ResourceVersion
}

// compareCollections checks that restored serves every object exactly as source did at revision.
func compareCollections(t *testing.T, source *sqlkubeServer, revision int64, restored *sqlkubeServer) {
	t.Helper()
	for _, path := range snapshotCollections {
		want, _ := listAt(t, source, path, revision)
		got, _ := listAt(t, restored, path, 0)
		if len(want) == 0 || len(got) != len(want) {
			t.Errorf("%s: restored has %d objects, the source had %d at revision %d", path, len(got), len(want), revision)
			continue
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("%s: restored object differs:\n got %s\nwant %s", path, got[i], want[i])
			}
		}
	}
}

// checkWritesContinueAbove checks that a write to the restored server gets a higher
// resourceVersion than any restored object, and that watches from before the snapshot are told
// their revision is gone (410 Expired), as after a compaction.
func checkWritesContinueAbove(t *testing.T, s *sqlkubeServer, revision int64) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("after-restore-", revision)}}
	created, err := s.clientset().CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rv := created.ResourceVersion; rv <= fmt.Sprint(revision) && len(rv) <= len(fmt.Sprint(revision)) {
		t.Fatalf("first write after restore got resourceVersion %s, want above the snapshot's %d", rv, revision)
	}
	resp := s.do(t, http.MethodGet, fmt.Sprintf("/api/v1/configmaps?watch=true&resourceVersion=%d", revision-1), nil)
	if resp.code != http.StatusGone && !bytes.Contains(resp.body, []byte(`"code":410`)) {
		t.Fatalf("watch from before the snapshot answered %d: %s", resp.code, resp.body)
	}
}

// TestSnapshotRefusals: restore refuses a database that has objects and a damaged file, and
// leaves the target untouched.
func TestSnapshotRefusals(t *testing.T) {
	s := startServer(t, sqltest.SQLiteDSN(t))
	populateForSnapshot(t, s, "refusals")
	file := filepath.Join(t.TempDir(), "good.snapshot")
	if code, out := runToExit(t, nil, "snapshot", "save", "--db", s.dsn, file); code != 0 {
		t.Fatalf("snapshot save exited %d: %s", code, out)
	}
	status := snapshotStatus(t, file)

	code, out := runToExit(t, nil, "snapshot", "restore", "--db", s.dsn, file)
	if code != 1 || !strings.Contains(out, "the target database is not empty (current revision") {
		t.Fatalf("restore into the served database exited %d: %s", code, out)
	}

	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x01
	damaged := filepath.Join(t.TempDir(), "damaged.snapshot")
	if err := os.WriteFile(damaged, data, 0o600); err != nil {
		t.Fatal(err)
	}
	target := sqltest.PostgresDSN(t)
	for _, args := range [][]string{{"restore", "--db", target, damaged}, {"status", damaged}} {
		code, out := runToExit(t, nil, append([]string{"snapshot"}, args...)...)
		if code != 1 || !strings.Contains(out, "snapshot: the file is corrupt or not a sqlkube snapshot") {
			t.Fatalf("snapshot %s of a damaged file exited %d: %s", args[0], code, out)
		}
	}
	// The target is still empty: the good snapshot restores into it.
	restoreSnapshot(t, target, file)

	code, out = runToExit(t, nil, "snapshot", "status", "-w", "table", file)
	wantRow := fmt.Sprintf("| %s | %-8d |", status.Hash, status.Revision)
	if code != 0 || !strings.Contains(out, "HASH") || !strings.Contains(out, wantRow) {
		t.Fatalf("snapshot status -w table exited %d: %s", code, out)
	}
	code, out = runToExit(t, nil, "snapshot", "status", file)
	if code != 0 || !strings.HasPrefix(out, fmt.Sprintf("%s, %d, %d, ", status.Hash, status.Revision, status.TotalKey)) {
		t.Fatalf("snapshot status exited %d: %s", code, out)
	}
}

// TestSnapshotKeepsSecretsEncrypted: Secrets encrypted at rest are saved as stored, so the file
// holds no plaintext, and a server restored with the same encryption config reads them.
func TestSnapshotKeepsSecretsEncrypted(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "encryption.yaml")
	encryptionConfig(t, config, map[string]string{"key1": newKey(t)}, "key1")
	source, target := sqltest.SQLiteDSN(t), sqltest.PostgresDSN(t)
	s := startServer(t, source, "--encryption-provider-config="+config)
	certDirs.Store(target, s.pkiDir)
	plaintext := "snapshot-plaintext-marker"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sealed"}, Data: map[string][]byte{"password": []byte(plaintext)}}
	created, err := s.clientset().CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "encrypted.snapshot")
	if code, out := runToExit(t, nil, "snapshot", "save", "--db", source, file); code != 0 {
		t.Fatalf("snapshot save exited %d: %s", code, out)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	encoded, _ := json.Marshal([]byte(plaintext)) // the base64 a Secret's JSON carries
	if bytes.Contains(data, []byte(plaintext)) || bytes.Contains(data, bytes.Trim(encoded, `"`)) || !bytes.Contains(data, []byte("k8s:enc:aescbc:v1:key1:")) {
		t.Fatal("the snapshot does not hold the Secret encrypted")
	}
	restoreSnapshot(t, target, file)
	restored := startServer(t, target, "--encryption-provider-config="+config)
	got, err := restored.clientset().CoreV1().Secrets("default").Get(ctx, "sealed", metav1.GetOptions{})
	if err != nil || string(got.Data["password"]) != plaintext || got.ResourceVersion != created.ResourceVersion || got.UID != created.UID {
		t.Fatalf("restored Secret: %+v, %v; want the one created, %+v", got, err, created)
	}
}
