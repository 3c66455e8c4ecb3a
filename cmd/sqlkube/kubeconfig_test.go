package main

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/sqlkube/sqlkube/server/pki"
)

// TestKubeconfigDefaults: without --cert-dir and --server, sqlkube kubeconfig uses the CA a
// server on --db generated and the server its admin kubeconfig names.
func TestKubeconfigDefaults(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.Dir(filepath.Join(dir, "sqlkube-pki")).EnsureCA()
	if err != nil {
		t.Fatal(err)
	}
	admin, err := ca.Kubeconfig("https://127.0.0.1:9443", "system:admin", []string{"system:masters"})
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteKubeconfig(filepath.Join(dir, "sqlkube.kubeconfig"), admin); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "kubeconfig", "--db", "sqlite://"+filepath.Join(dir, "sqlkube.db"), "--user", "alice", "--group", "dev")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	cfg, err := clientcmd.Load([]byte(stdout))
	if err != nil {
		t.Fatal(err)
	}
	rest, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if rest.Host != "https://127.0.0.1:9443" || string(rest.CAData) != string(ca.CertPEM) {
		t.Errorf("server %q, CA %q; want the admin kubeconfig's server and the generated CA", rest.Host, rest.CAData)
	}

	code, _, stderr = runCLI(t, "kubeconfig", "--db", "postgres://postgres@127.0.0.1/x", "--user", "alice")
	if code != 2 || !strings.Contains(stderr, "--cert-dir is required on PostgreSQL") {
		t.Errorf("on PostgreSQL without --cert-dir: exit %d, stderr %q", code, stderr)
	}
}

// TestSubcommandHelpOnStdout: every subcommand's --help goes to stdout, as the main command's.
func TestSubcommandHelpOnStdout(t *testing.T) {
	for _, args := range [][]string{{"kubeconfig", "--help"}, {"compact", "--help"}, {"snapshot", "save", "--help"}, {"snapshot", "--help"}, {"bench", "--help"}} {
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 || stderr != "" || !strings.Contains(stdout, "Usage:") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}
