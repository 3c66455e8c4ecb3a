package kuberef

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// authority is the full reference server's own certificate authority: it signs the serving
// certificate and the client certificates of every identity, as a cluster's CA would.
type authority struct {
	cert *x509.Certificate
	key  crypto.Signer
	pool *x509.CertPool
}

func newAuthority() (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	template := certTemplate(pkix.Name{CommonName: "kuberef-ca"})
	template.IsCA, template.BasicConstraintsValid = true, true
	template.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &authority{cert: cert, key: key, pool: pool}, nil
}

func certTemplate(subject pkix.Name) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
}

// issue signs a new key's certificate for template.
func (a *authority) issue(template *x509.Certificate) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	der, err := x509.CreateCertificate(rand.Reader, template, a.cert, key.Public(), a.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// servingCert is the server's certificate for 127.0.0.1 and localhost.
func (a *authority) servingCert() (tls.Certificate, error) {
	template := certTemplate(pkix.Name{CommonName: "kube-apiserver"})
	template.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	template.DNSNames = []string{"localhost"}
	template.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	return a.issue(template)
}

// client is an HTTP client presenting a certificate for user in groups (its common name and
// organizations, as kube's x509 authenticator reads them).
func (a *authority) client(user string, groups []string) (*http.Client, error) {
	cert, err := a.clientCert(user, groups)
	if err != nil {
		return nil, err
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: a.pool, Certificates: []tls.Certificate{cert}}}
	return &http.Client{Transport: transport}, nil
}

// clientCert is a client certificate for user in groups.
func (a *authority) clientCert(user string, groups []string) (tls.Certificate, error) {
	template := certTemplate(pkix.Name{CommonName: user, Organization: groups})
	template.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return a.issue(template)
}

// writeCertPair writes a certificate's chain and its key as NAME.crt and NAME.key in dir.
func writeCertPair(dir, name string, cert tls.Certificate) error {
	var certs []byte
	for _, der := range cert.Certificate {
		certs = append(certs, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".crt"), certs, 0o600); err != nil {
		return err
	}
	return writeKey(filepath.Join(dir, name+".key"), cert.PrivateKey)
}

// writeKey writes an ECDSA key in SEC 1 form, the one kube's service account key flags read
// (they take no PKCS #8).
func writeKey(path string, key any) error {
	data, err := keyPEM(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

func keyPEM(key any) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key.(*ecdsa.PrivateKey))
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func writeCACert(path string, cert *x509.Certificate) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600)
}
