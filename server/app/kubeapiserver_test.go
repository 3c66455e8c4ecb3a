package app

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sqlkube/sqlkube/server/controllers"
)

// kubeAPIServerDefaults are kube-apiserver's flags when not given.
var kubeAPIServerDefaults = kubeAPIServerConfig{SecurePort: 6443, BindAddress: net.IPv4zero, AllowPrivileged: true}

// envtestArgs is the command line controller-runtime's envtest (v0.25) starts kube-apiserver
// with, in dir, serving on port 41234.
func envtestArgs(dir string) []string {
	return []string{
		"--allow-privileged=true", "--authorization-mode=RBAC", "--bind-address=127.0.0.1",
		"--cert-dir=" + dir, "--client-ca-file=" + dir + "/client-cert-auth-ca.crt",
		"--disable-admission-plugins=ServiceAccount", "--etcd-servers=http://127.0.0.1:2379",
		"--secure-port=41234", "--service-account-issuer=https://127.0.0.1:41234/",
		"--service-account-key-file=" + dir + "/sa-signer.crt", "--service-account-signing-key-file=" + dir + "/sa-signer.key",
		"--service-cluster-ip-range=10.0.0.0/24",
	}
}

// Started as kube-apiserver with envtest's flags, sqlkube serves where envtest asked, keeps its
// objects in a SQLite file in --cert-dir, writes no admin kubeconfig, and handles certificates
// as kube-apiserver does.
func TestParseKubeAPIServerEnvtest(t *testing.T) {
	cfg, err := ParseKubeAPIServer(envtestArgs("/tmp/k8s_test_framework_1"), nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := securityConfig{
		KubeCertificates: true, CertDir: "/tmp/k8s_test_framework_1", ClientCAFile: "/tmp/k8s_test_framework_1/client-cert-auth-ca.crt",
		TLSMinVersion: "VersionTLS12", AnonymousAuth: true, AuthorizationModes: []string{"RBAC"},
		SAIssuer: "https://127.0.0.1:41234/", SAKeyFiles: []string{"/tmp/k8s_test_framework_1/sa-signer.crt"},
		SASigningKeyFile: "/tmp/k8s_test_framework_1/sa-signer.key",
	}
	if diff := cmp.Diff(want, cfg.Security); diff != "" {
		t.Errorf("security (-want +got):\n%s", diff)
	}
	if cfg.Listen != "127.0.0.1:41234" || cfg.DSN != "sqlite:///tmp/k8s_test_framework_1/sqlkube.db" {
		t.Errorf("listen %q, db %q", cfg.Listen, cfg.DSN)
	}
	if diff := cmp.Diff([]string{"http://127.0.0.1:2379"}, cfg.KubeAPIServer.EtcdServers); diff != "" {
		t.Errorf("--etcd-servers (-want +got):\n%s", diff)
	}
}

// Without flags, kube-apiserver's defaults: all addresses on 6443, /var/run/kubernetes; sqlkube
// started under its own name keeps its own.
func TestParseKubeAPIServerDefaults(t *testing.T) {
	kube, err := ParseKubeAPIServer(nil, nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if kube.Listen != "0.0.0.0:6443" || kube.DSN != "sqlite:///var/run/kubernetes/sqlkube.db" ||
		kube.Security.CertDir != "/var/run/kubernetes" || kube.Security.AdminKubeconfig != "" || kube.Security.SASigningKeyFile != "" {
		t.Errorf("kube-apiserver's defaults: %+v", kube)
	}
	if diff := cmp.Diff(controllers.Selection{"-*"}, kube.Controllers); diff != "" {
		t.Errorf("kube-apiserver runs none of kube-controller-manager's controllers (-want +got):\n%s", diff)
	}
	own, err := Parse(nil, nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if own.Listen != "127.0.0.1:8080" || own.Security.KubeCertificates {
		t.Errorf("sqlkube's defaults: listen %q, kube certificates %t", own.Listen, own.Security.KubeCertificates)
	}
	// kube's serving flags work under sqlkube's name too, and --db wins over the default file.
	own, err = Parse([]string{"--secure-port=7443", "--db=sqlite://./x.db"}, nil, &bytes.Buffer{})
	if err != nil || own.Listen != "0.0.0.0:7443" || own.DSN != "sqlite://./x.db" {
		t.Errorf("sqlkube --secure-port=7443: listen %q, db %q, %v", own.Listen, own.DSN, err)
	}
}

// What sqlkube cannot honour is refused naming the flag; older envtests' --insecure-port=0 is
// accepted, and hidden from --help so that newer ones do not pass it.
func TestParseKubeAPIServerRefuses(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--insecure-port=8080"}, "--insecure-port: 8080: sqlkube serves no insecure port"},
		{[]string{"--allow-privileged=false"}, "--allow-privileged=false is not supported"},
		{[]string{"--secure-port=0"}, "--secure-port 0 must be between 1 and 65535, inclusive. It cannot be turned off with 0"},
		{[]string{"--listen=:1", "--bind-address=127.0.0.1"}, "--listen and --secure-port/--bind-address both set the serving address"},
		{[]string{"--bind-address=localhost"}, `invalid argument "localhost" for "--bind-address"`},
		{[]string{"--etcd-cafile=/etc/etcd/ca.crt"}, "unknown flag: --etcd-cafile"},
	} {
		if _, err := ParseKubeAPIServer(tt.args, nil, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: err %v, want %q", tt.args, err, tt.want)
		}
	}
	if _, err := ParseKubeAPIServer([]string{"--insecure-port=0"}, nil, &bytes.Buffer{}); err != nil {
		t.Errorf("--insecure-port=0: %v", err)
	}
	var help bytes.Buffer
	_, _ = ParseKubeAPIServer([]string{"--help"}, nil, &help)
	if !strings.Contains(help.String(), "--secure-port") || strings.Contains(help.String(), "--insecure-port") {
		t.Errorf("--help lists --secure-port and not --insecure-port:\n%s", help.String())
	}
}

// As kube-apiserver, the serving pair in --cert-dir is used as found (envtest's, signed by its
// CA), and made self-signed only when missing; no CA and no ServiceAccount key are generated.
func TestKubeServingPair(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, err := kubeServingPair(dir, []string{"localhost", "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil || leaf.VerifyHostname("127.0.0.1") != nil || leaf.VerifyHostname("localhost") != nil {
		t.Fatalf("self-signed serving certificate for %v, %v: %v", leaf.DNSNames, leaf.IPAddresses, err)
	}
	made, _ := os.ReadFile(certFile)
	if _, _, err := kubeServingPair(dir, []string{"localhost", "192.0.2.1"}); err != nil {
		t.Fatal(err)
	}
	if kept, _ := os.ReadFile(certFile); !bytes.Equal(kept, made) {
		t.Error("the serving certificate in --cert-dir was replaced")
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"apiserver.crt", "apiserver.key"}, names); diff != "" {
		t.Errorf("files in --cert-dir (-want +got):\n%s", diff)
	}
}
