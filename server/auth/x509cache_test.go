package auth

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"

	"github.com/sqlkube/sqlkube/server/pki"
)

// testCA is a CA of a fresh certificate directory, and the verify options that trust it.
func testCA(t *testing.T) (*pki.CA, x509.VerifyOptions) {
	t.Helper()
	ca, err := pki.Dir(t.TempDir()).Ensure([]string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	return ca, x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
}

// requestWithCertificate is a request presenting a client certificate for user, signed by ca.
func requestWithCertificate(t *testing.T, ca *pki.CA, user string) *http.Request {
	t.Helper()
	certPEM, _, err := ca.Issue(pki.ClientTemplate(user, []string{"team"}))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "https://localhost/api", nil)
	req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
	return req
}

// countingCache is a certificate cache whose verifications are counted.
func countingCache(verify *x509.VerifyOptions) (*cachedCertificates, *int) {
	verifications := 0
	clientCA := func() (x509.VerifyOptions, bool) { return *verify, true }
	cache := newCachedCertificates(clientCA, x509request.CommonNameUserConversion)
	next := cache.next
	cache.next = authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		verifications++
		return next.AuthenticateRequest(req)
	})
	return cache, &verifications
}

func TestCachedCertificates(t *testing.T) {
	ca, opts := testCA(t)
	cache, verifications := countingCache(&opts)
	clock := time.Now()
	cache.now = func() time.Time { return clock }
	alice := requestWithCertificate(t, ca, "alice")

	authenticate := func(req *http.Request, wantUser string, wantVerifications int) {
		t.Helper()
		resp, ok, err := cache.AuthenticateRequest(req)
		switch {
		case wantUser == "" && (ok || err == nil):
			t.Fatalf("authenticated (%v, %v), want refused with an error", ok, err)
		case wantUser != "" && (!ok || err != nil || resp.User.GetName() != wantUser):
			t.Fatalf("got %v, %v, %v; want %s", resp, ok, err, wantUser)
		}
		if *verifications != wantVerifications {
			t.Fatalf("%d verifications, want %d", *verifications, wantVerifications)
		}
	}
	authenticate(alice, "alice", 1)
	authenticate(alice, "alice", 1) // from the cache
	authenticate(requestWithCertificate(t, ca, "bob"), "bob", 2)

	clock = clock.Add(certificateSuccessTTL)
	authenticate(alice, "alice", 3) // expired: verified again

	other, otherOpts := testCA(t)
	stranger := requestWithCertificate(t, other, "mallory")
	authenticate(stranger, "", 4)
	authenticate(stranger, "", 5) // failures are not cached

	opts = otherOpts // the client CA file now holds another CA
	authenticate(alice, "", 6)
	authenticate(stranger, "mallory", 7)

	noCert, _ := http.NewRequest(http.MethodGet, "https://localhost/api", nil)
	if _, ok, err := cache.AuthenticateRequest(noCert); ok || err != nil {
		t.Fatalf("a request without a certificate: %v, %v; want not authenticated, no error", ok, err)
	}
}
