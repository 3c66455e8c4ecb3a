package e2e

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

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

// TestSecondServerOnOneSQLiteFileIsRefused: a SQLite file is served by one process; a second
// server started on it exits with a clear error, and the first goes on serving.
func TestSecondServerOnOneSQLiteFileIsRefused(t *testing.T) {
	dsn := sqltest.SQLiteDSN(t)
	s := startServer(t, dsn)
	code, out := runToExit(t, nil, "--listen=127.0.0.1:0", "--db="+dsn, "--cert-dir="+s.pkiDir, "--admin-kubeconfig=-")
	if want := "another sqlkube serves the SQLite database"; code == 0 || !strings.Contains(out, want) {
		t.Fatalf("exit %d, output:\n%s\nwant a non-zero exit mentioning %q", code, out, want)
	}
	createNamespace(t, s.clientset(), "still-served")
}

// TestNewerSchemaIsRefused checks that a binary refuses a database migrated by a newer one.
func TestNewerSchemaIsRefused(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		s := startServer(t, dsn)
		s.stop()
		bumpSchemaVersion(t, dsn, 9999)

		code, out := runToExit(t, nil, "--listen=127.0.0.1:0", "--db="+dsn, "--cert-dir="+t.TempDir())
		if code == 0 || !strings.Contains(out, "database schema version 9999 is newer than this sqlkube supports") {
			t.Fatalf("start on a newer schema: exit %d, output:\n%s\nwant a non-zero exit saying the schema is newer", code, out)
		}
	})
}

// bumpSchemaVersion sets golang-migrate's recorded schema version, as a newer binary would.
func bumpSchemaVersion(t *testing.T, dsn string, version int) {
	t.Helper()
	res, err := sqltest.Open(t, dsn).ExecContext(ctx, fmt.Sprintf("UPDATE schema_migrations SET version = %d", version))
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
		{"unreachable PostgreSQL", []string{"--db=postgres://postgres@127.0.0.1:1/nope?sslmode=disable", "--cert-dir=" + t.TempDir()}, nil,
			"sqlkube: open database: connecting to PostgreSQL at 127.0.0.1:1"},
		{"PostgreSQL without a certificate directory", []string{"--db=postgres://postgres@127.0.0.1:1/nope?sslmode=disable"}, nil,
			"sqlkube: --cert-dir is required on PostgreSQL unless --tls-cert-file, --tls-private-key-file and --client-ca-file are given"},
		{"half a serving key pair", []string{"--tls-cert-file=/x.crt"}, nil,
			"sqlkube: --tls-cert-file and --tls-private-key-file go together"},
		{"unknown authorization mode", []string{"--authorization-mode=RBAC,Magic"}, nil,
			`unknown authorization mode "Magic"`},
		{"a controller sqlkube does not run", []string{"--controllers=*,-deployment-controller"}, nil,
			`sqlkube: --controllers: "deployment-controller" is not in the list of known controllers`},
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
