package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func TestEnsureCreatesThenReuses(t *testing.T) {
	d := Dir(t.TempDir())
	ca, err := d.Ensure([]string{"localhost", "127.0.0.1", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	caBefore := readFile(t, d.Path(CACertFile))
	servingBefore := readFile(t, d.Path(ServingCertFile))
	for name, want := range map[string]os.FileMode{CAKeyFile: 0o600, ServingKeyFile: 0o600, CACertFile: 0o644} {
		if st, err := os.Stat(d.Path(name)); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", name, st.Mode().Perm(), err, want)
		}
	}
	if !ca.Cert.IsCA {
		t.Fatal("the CA certificate is not a CA")
	}

	if _, err := d.Ensure([]string{"localhost", "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	if readFile(t, d.Path(ServingCertFile)) != servingBefore {
		t.Error("a second start with hosts the certificate covers reissued it")
	}

	if _, err := d.Ensure([]string{"localhost", "api.example.com"}); err != nil {
		t.Fatal(err)
	}
	if readFile(t, d.Path(CACertFile)) != caBefore {
		t.Error("a new host replaced the CA")
	}
	if readFile(t, d.Path(ServingCertFile)) == servingBefore {
		t.Error("a host the serving certificate does not cover did not reissue it")
	}
}

func TestConcurrentEnsureMakesOneCA(t *testing.T) {
	d := Dir(t.TempDir())
	var wg sync.WaitGroup
	cas := make([]string, 8)
	for i := range cas {
		wg.Go(func() {
			ca, err := d.Ensure([]string{"localhost"})
			if err != nil {
				t.Error(err)
				return
			}
			cas[i] = string(ca.CertPEM)
		})
	}
	wg.Wait()
	for _, c := range cas[1:] {
		if c != cas[0] {
			t.Fatal("replicas starting together made different CAs")
		}
	}
}

// TestKubeconfigReachesServer checks the whole chain a client sees: the serving certificate
// verifies against the kubeconfig's CA for the host, and the client certificate carries the
// user and groups kube's x509 authenticator reads.
func TestKubeconfigReachesServer(t *testing.T) {
	d := Dir(t.TempDir())
	ca, err := d.Ensure([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	serving, err := tls.LoadX509KeyPair(d.Path(ServingCertFile), d.Path(ServingKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	var peer *x509.Certificate
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer = r.TLS.PeerCertificates[0]
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serving}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool(ca.Cert)}
	srv.StartTLS()
	defer srv.Close()

	data, err := ca.Kubeconfig(srv.URL, "alice", []string{"system:masters", "dev"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	groups := slices.Sorted(slices.Values(peer.Subject.Organization))
	if peer.Subject.CommonName != "alice" || !slices.Equal(groups, []string{"dev", "system:masters"}) {
		t.Fatalf("client certificate subject %v, want CN=alice O=[system:masters dev]", peer.Subject)
	}
}

func pool(c *x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c)
	return p
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
