package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// encryptionConfig writes an EncryptionConfiguration that encrypts Secrets with aescbc under
// the named keys, the first one encrypting, then reads plaintext (identity) last.
func encryptionConfig(t *testing.T, path string, keys map[string]string, order ...string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n")
	for _, name := range order {
		fmt.Fprintf(&b, "      - name: %s\n        secret: %s\n", name, keys[name])
	}
	b.WriteString("  - identity: {}\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

func newKey(t *testing.T) string {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(key)
}

// storedValue reads what the database keeps for the newest revision of an object.
func storedValue(t *testing.T, dsn, resource, name string) []byte {
	t.Helper()
	var value []byte
	err := sqltest.Open(t, dsn).QueryRow(`SELECT value FROM revisions WHERE resource = $1 AND name = $2 ORDER BY revision DESC LIMIT 1`,
		resource, name).Scan(&value)
	if err != nil {
		t.Fatal(err)
	}
	return value
}

// TestEncryptionAtRest: with --encryption-provider-config, Secrets are kept encrypted in the
// database under kube's k8s:enc:aescbc:v1:KEY: prefix, with no trace of their data, and read,
// listed, label-selected and watched as usual; ConfigMaps, not named, stay plaintext. Keys rotate
// the kube way: add a key second, restart, make it first, restart, rewrite every Secret, drop the
// old key, restart; every Secret stays readable throughout.
func TestEncryptionAtRest(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		keys := map[string]string{"key1": newKey(t), "key2": newKey(t)}
		config := filepath.Join(t.TempDir(), "encryption.yaml")
		encryptionConfig(t, config, keys, "key1")
		s := startServer(t, dsn, "--encryption-provider-config="+config)
		client := kubernetes.NewForConfigOrDie(s.restConfig())
		secrets := client.CoreV1().Secrets("default")
		restart := func() { // a restarted server listens on another port
			s.stop()
			s.restart()
			secrets = kubernetes.NewForConfigOrDie(s.restConfig()).CoreV1().Secrets("default")
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: map[string]string{"app": "shop"}},
			StringData: map[string]string{"password": "hunter2-hunter2"}}
		if _, err := secrets.Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"},
			Data: map[string]string{"note": "not-a-secret"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		expectEncrypted(t, dsn, "db", "key1")
		if raw := storedValue(t, dsn, "configmaps", "plain"); !bytes.Contains(raw, []byte("not-a-secret")) {
			t.Errorf("a ConfigMap is kept as %q", raw)
		}
		expectReadable(t, secrets)

		encryptionConfig(t, config, keys, "key1", "key2")
		restart()
		expectReadable(t, secrets)
		encryptionConfig(t, config, keys, "key2", "key1")
		restart()
		expectReadable(t, secrets)
		list, err := secrets.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range list.Items { // kubectl get secrets -A -o json | kubectl replace -f -
			if _, err := secrets.Update(ctx, &list.Items[i], metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		expectEncrypted(t, dsn, "db", "key2")
		encryptionConfig(t, config, keys, "key2")
		restart()
		expectReadable(t, secrets)
	})
}

func expectEncrypted(t *testing.T, dsn, name, key string) {
	t.Helper()
	raw := storedValue(t, dsn, "secrets", name)
	if !bytes.HasPrefix(raw, []byte("k8s:enc:aescbc:v1:"+key+":")) {
		t.Errorf("the database keeps %.40q, want kube's aescbc prefix with %s", raw, key)
	}
	for _, plain := range []string{"hunter2", base64.StdEncoding.EncodeToString([]byte("hunter2-hunter2")), `"app"`} {
		if bytes.Contains(raw, []byte(plain)) {
			t.Errorf("the database keeps %q in the clear", plain)
		}
	}
}

// expectReadable: the Secret is read by get, list with a label selector and a watch from 0.
func expectReadable(t *testing.T, secrets interface {
	Get(context.Context, string, metav1.GetOptions) (*corev1.Secret, error)
	List(context.Context, metav1.ListOptions) (*corev1.SecretList, error)
}) {
	t.Helper()
	ctx := context.Background()
	got, err := secrets.Get(ctx, "db", metav1.GetOptions{})
	if err != nil || string(got.Data["password"]) != "hunter2-hunter2" {
		t.Fatalf("get: %v %v", got, err)
	}
	list, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: "app=shop"})
	if err != nil || len(list.Items) != 1 || string(list.Items[0].Data["password"]) != "hunter2-hunter2" {
		t.Fatalf("list app=shop: %v %v", list, err)
	}
}

// TestEncryptionAtRestGarbageCollection: the garbage collector finds an encrypted dependent by its
// ownerReferences, which the database cannot see, also after a restart (the collector's start-up
// list reads the objects marked from their plaintext).
func TestEncryptionAtRestGarbageCollection(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		config := filepath.Join(t.TempDir(), "encryption.yaml")
		encryptionConfig(t, config, map[string]string{"key1": newKey(t)}, "key1")
		s := startServer(t, dsn, "--encryption-provider-config="+config)
		client := kubernetes.NewForConfigOrDie(s.restConfig())
		owner, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "owned",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if raw := storedValue(t, dsn, "secrets", "owned"); bytes.Contains(raw, []byte("ownerReferences")) {
			t.Fatalf("the dependent is stored in the clear: %.60q", raw)
		}
		s.stop()
		s.restart()
		client = kubernetes.NewForConfigOrDie(s.restConfig())
		if err := client.CoreV1().ConfigMaps("default").Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "the encrypted dependent collected", func() (bool, error) {
			_, err := client.CoreV1().Secrets("default").Get(ctx, "owned", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})
}

// TestEncryptionAtRestWildcardAndCompaction: with "*.*" every resource is encrypted (namespaces
// too), and compaction still trims an encrypted object's history to its latest row.
func TestEncryptionAtRestWildcardAndCompaction(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		config := filepath.Join(t.TempDir(), "encryption.yaml")
		wildcard := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: ['*.*']\n" +
			"  providers:\n  - aesgcm:\n      keys:\n      - name: gcm1\n        secret: " + newKey(t) + "\n"
		if err := os.WriteFile(config, []byte(wildcard), 0o600); err != nil {
			t.Fatal(err)
		}
		s := startServer(t, dsn, "--encryption-provider-config="+config,
			"--retention=1s", "--retention-min-revisions=1", "--compaction-interval=1s")
		cms := kubernetes.NewForConfigOrDie(s.restConfig()).CoreV1().ConfigMaps("default")
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v0-plaintext"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 3; i++ {
			cm.Data["k"] = fmt.Sprint("v", i, "-plaintext")
			if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// A later write lets compaction pass the last update.
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for resource, name := range map[string]string{"configmaps": "c", "namespaces": "default"} {
			if raw := storedValue(t, dsn, resource, name); !bytes.HasPrefix(raw, []byte("k8s:enc:aesgcm:v1:gcm1:")) || bytes.Contains(raw, []byte("plaintext")) {
				t.Errorf("%s/%s stored as %.40q", resource, name, raw)
			}
		}
		db := sqltest.Open(t, dsn)
		eventually(t, 30*time.Second, "old versions compacted", func() (bool, error) {
			var rows int
			err := db.QueryRow(`SELECT count(*) FROM revisions WHERE resource = 'configmaps' AND name = 'c'`).Scan(&rows)
			return rows == 1, err
		})
		if got, err := cms.Get(ctx, "c", metav1.GetOptions{}); err != nil || got.Data["k"] != "v3-plaintext" {
			t.Fatalf("get after compaction: %v %+v", err, got)
		}
	})
}

// TestEncryptionAtRestPurge: Secrets written before encryption was turned on keep their
// plaintext in history after the README's rewrite (the default --retention-min-revisions keeps
// every revision), and `sqlkube compact`, run beside the server, removes it from the database:
// not a byte of it left in the SQLite file or its WAL, not a row of it in PostgreSQL, nor in the
// files of PostgreSQL's tables where the test can read them. A deleted Secret goes the same way.
func TestEncryptionAtRestPurge(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		password := "purge-me-" + rand.Text()
		plaintexts := []string{password, base64.StdEncoding.EncodeToString([]byte(password))}
		s := startServer(t, dsn)
		secrets := s.clientset().CoreV1().Secrets("default")
		kept, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kept"},
			StringData: map[string]string{"password": password}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		kept.Labels = map[string]string{"revision": "two"}
		if _, err := secrets.Update(ctx, kept, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "gone"},
			StringData: map[string]string{"password": password}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := secrets.Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}

		s.stop()
		config := filepath.Join(t.TempDir(), "encryption.yaml")
		encryptionConfig(t, config, map[string]string{"key1": newKey(t)}, "key1")
		s.args = []string{"--encryption-provider-config=" + config}
		s.restart()
		s.mustKubectl(t, s.mustKubectl(t, "", "get", "secrets", "-A", "-o", "json"), "replace", "-f", "-")
		if raw := storedValue(t, dsn, "secrets", "kept"); !bytes.HasPrefix(raw, []byte("k8s:enc:aescbc:v1:key1:")) {
			t.Fatalf("after the rewrite the Secret is stored as %.40q", raw)
		}
		if found := plaintextStored(t, dsn, plaintexts); len(found) == 0 {
			t.Fatal("before compaction the history holds no plaintext: the scan sees nothing")
		}

		if code, out := runToExit(t, nil, "compact", "--db="+dsn); code != 0 {
			t.Fatalf("sqlkube compact exited %d:\n%s", code, out)
		}
		if found := plaintextStored(t, dsn, plaintexts); len(found) > 0 {
			t.Errorf("after sqlkube compact the plaintext is still in %v", found)
		}
		got, err := s.clientset().CoreV1().Secrets("default").Get(ctx, "kept", metav1.GetOptions{})
		if err != nil || string(got.Data["password"]) != password {
			t.Fatalf("the Secret after compaction: %v %v", got, err)
		}
		expectOwnerOnly(t, dsn)
	})
}

// expectOwnerOnly: the SQLite database and its WAL and shared-memory files, which hold every
// object, are readable by their owner only.
func expectOwnerOnly(t *testing.T, dsn string) {
	t.Helper()
	path, ok := strings.CutPrefix(dsn, "sqlite://")
	if !ok {
		return
	}
	for _, file := range []string{path, path + "-wal", path + "-shm"} {
		info, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		if mode := info.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s has mode %o, want 600", filepath.Base(file), mode)
		}
	}
}

// plaintextStored lists where the database keeps any of plaintexts: the SQLite files' bytes;
// PostgreSQL's rows, and its tables' files when this process can read them (a server on this
// machine, run by this user or root).
func plaintextStored(t *testing.T, dsn string, plaintexts []string) []string {
	t.Helper()
	var found []string
	contains := func(where string, data []byte) {
		for _, plain := range plaintexts {
			if bytes.Contains(data, []byte(plain)) {
				found = append(found, fmt.Sprintf("%s (%q)", where, plain))
			}
		}
	}
	if path, ok := strings.CutPrefix(dsn, "sqlite://"); ok {
		for _, file := range []string{path, path + "-wal", path + "-shm"} {
			data, err := os.ReadFile(file)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			contains(filepath.Base(file), data)
		}
		return found
	}
	db := sqltest.Open(t, dsn)
	for _, plain := range plaintexts {
		var rows int
		if err := db.QueryRow(`SELECT count(*) FROM revisions WHERE position($1::bytea in value) > 0`, []byte(plain)).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if rows > 0 {
			found = append(found, fmt.Sprintf("%d rows of revisions (%q)", rows, plain))
		}
	}
	for _, table := range []string{"revisions", "objects"} {
		for path, data := range postgresTableFiles(t, db, table) {
			contains(path, data)
		}
	}
	return found
}

// postgresTableFiles reads the files of a table and its TOAST table, once PostgreSQL has written
// its buffers to them (CHECKPOINT); none if the data directory cannot be read from here.
func postgresTableFiles(t *testing.T, db *sql.DB, table string) map[string][]byte {
	t.Helper()
	if _, err := db.Exec(`CHECKPOINT`); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT current_setting('data_directory') || '/' || pg_relation_filepath(c.oid)
		FROM pg_class c WHERE c.oid = $1::regclass OR c.oid = (SELECT reltoastrelid FROM pg_class WHERE oid = $1::regclass)`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	files := map[string][]byte{}
	for rows.Next() {
		var path string
		if err := rows.Scan(&path); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Logf("not scanning PostgreSQL's files: %v", err)
			return nil
		}
		files[path] = data
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return files
}

// TestEncryptionAtRestUnreadable: a server started without the configuration that encrypted a
// Secret answers every read of it as kube-apiserver does: a 500 InternalError with the identity
// transformer's words (a list names the object's etcd key; a watch ends with an ERROR event),
// while everything else works; with the configuration back, the Secret reads again.
func TestEncryptionAtRestUnreadable(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		config := filepath.Join(t.TempDir(), "encryption.yaml")
		encryptionConfig(t, config, map[string]string{"key1": newKey(t)}, "key1")
		s := startServer(t, dsn, "--encryption-provider-config="+config)
		secret, err := s.clientset().CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db",
			Labels: map[string]string{"app": "shop"}}, StringData: map[string]string{"password": "hunter2-hunter2"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.stop()
		s.args = nil
		s.restart()

		const encrypted = "identity transformer tried to read encrypted data"
		unreadable := apierrors.NewInternalError(errors.New(encrypted))
		expectUnreadable(t, s, unreadable)
		resp := s.do(t, http.MethodGet, "/api/v1/namespaces/default/secrets", nil)
		assertStatus(t, resp.status(t), apierrors.NewInternalError(fmt.Errorf("unable to transform key %q: %s", "/registry/secrets/default/db", encrypted)))
		if out, err := s.kubectl(t, "", "get", "secret", "db"); err == nil || !strings.Contains(err.Error(), "Error from server (InternalError): Internal error occurred: "+encrypted) {
			t.Errorf("kubectl get secret db: %v\n%s", err, out)
		}
		secrets := s.clientset().CoreV1().Secrets("default")
		_, err = secrets.Update(ctx, secret, metav1.UpdateOptions{})
		assertAPIError(t, err, unreadable)
		assertAPIError(t, secrets.Delete(ctx, "db", metav1.DeleteOptions{}), unreadable)
		expectWatchError(t, secrets, secret.ResourceVersion, unreadable)
		if _, err := s.clientset().CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"}},
			metav1.CreateOptions{}); err != nil {
			t.Errorf("other resources: %v", err)
		}

		s.stop()
		s.args = []string{"--encryption-provider-config=" + config}
		s.restart()
		expectReadable(t, s.clientset().CoreV1().Secrets("default"))
	})
}

// expectUnreadable: a raw get of the Secret db answers 500 with want.
func expectUnreadable(t *testing.T, s *sqlkubeServer, want *apierrors.StatusError) {
	t.Helper()
	resp := s.do(t, http.MethodGet, "/api/v1/namespaces/default/secrets/db", nil)
	if resp.code != http.StatusInternalServerError {
		t.Errorf("get answered %d, want 500", resp.code)
	}
	assertStatus(t, resp.status(t), want)
}

// expectWatchError: a watch that replays the Secret's creation from history ends with want.
func expectWatchError(t *testing.T, secrets interface {
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
}, createdAt string, want *apierrors.StatusError) {
	t.Helper()
	created, err := strconv.ParseInt(createdAt, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	w, err := secrets.Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(created-1, 10)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev := nextEvent(t, w, "the unreadable Secret")
	if ev.Type != watch.Error {
		t.Fatalf("watch got %s, want ERROR", ev.Type)
	}
	assertAPIError(t, apierrors.FromObject(ev.Object), want)
}
