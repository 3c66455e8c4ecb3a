// Package pki makes and keeps the certificates sqlkube serves with when it is not given any: a
// certificate authority, a serving certificate it signs, and client certificates for
// kubeconfigs. Everything lives as PEM files in one directory (--cert-dir) so that replicas
// sharing a database can share it too: the first process to start creates what is missing
// under a lock, later ones reuse it.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// File names inside the certificate directory, as kube-apiserver's --cert-dir names its own.
const (
	CACertFile      = "ca.crt"
	CAKeyFile       = "ca.key"
	ServingCertFile = "apiserver.crt"
	ServingKeyFile  = "apiserver.key"
	// ServiceAccountKeyFile signs ServiceAccount tokens (kubeadm's name for it).
	ServiceAccountKeyFile = "sa.key"
)

const (
	caValidity      = 10 * 365 * 24 * time.Hour
	leafValidity    = 365 * 24 * time.Hour
	renewBefore     = 30 * 24 * time.Hour
	backdate        = 5 * time.Minute // tolerates clients whose clocks run a little behind
	serialNumberLen = 128
)

// CA is a certificate authority whose key is at hand, able to sign certificates.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     crypto.Signer
}

// Dir is a certificate directory: the CA and the serving certificate sqlkube generated.
type Dir string

// Path is the path of the named file in the directory.
func (d Dir) Path(name string) string { return filepath.Join(string(d), name) }

// Ensure makes sure the directory holds a CA, a ServiceAccount signing key and a serving
// certificate for hosts (DNS names or
// IP addresses) and returns the CA. It creates the CA on first use and reuses it afterwards; it
// reissues the serving certificate when it is missing, does not cover every host, or expires
// within 30 days. Concurrent processes (replicas starting together on a shared directory) are
// serialised by a lock file, so they never make two CAs.
func (d Dir) Ensure(hosts []string) (*CA, error) {
	unlock, err := d.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	ca, err := d.loadOrCreateCA()
	if err != nil {
		return nil, err
	}
	if _, _, err := keyutil.LoadOrGenerateKeyFile(d.Path(ServiceAccountKeyFile)); err != nil {
		return nil, err
	}
	if d.servingCertCovers(ca, hosts) {
		return ca, nil
	}
	certPEM, keyPEM, err := ca.Issue(servingTemplate(hosts))
	if err != nil {
		return nil, err
	}
	if err := writeFile(d.Path(ServingKeyFile), keyPEM, 0o600); err != nil {
		return nil, err
	}
	return ca, writeFile(d.Path(ServingCertFile), certPEM, 0o644)
}

// EnsureCA makes sure the directory holds a CA, creating it on first use, and returns it: for
// a program that mints client certificates before a server in the directory has started.
func (d Dir) EnsureCA() (*CA, error) {
	unlock, err := d.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	return d.loadOrCreateCA()
}

// lock creates the directory if need be and holds its lock file until unlock is called.
func (d Dir) lock() (unlock func(), err error) {
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return nil, err
	}
	return lockDir(string(d))
}

// LoadCA reads the directory's CA, for signing client certificates (`sqlkube kubeconfig`).
func (d Dir) LoadCA() (*CA, error) {
	certPEM, err := os.ReadFile(d.Path(CACertFile))
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(d.Path(CAKeyFile))
	if err != nil {
		return nil, err
	}
	return parseCA(certPEM, keyPEM)
}

func (d Dir) loadOrCreateCA() (*CA, error) {
	ca, err := d.LoadCA()
	if !errors.Is(err, os.ErrNotExist) {
		return ca, err
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "sqlkube-ca"}, key)
	if err != nil {
		return nil, err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, err
	}
	certPEM, err := certutil.EncodeCertificates(cert)
	if err != nil {
		return nil, err
	}
	// The key is written first: a CA certificate without its key would be read as a CA that
	// cannot sign.
	if err := writeFile(d.Path(CAKeyFile), keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := writeFile(d.Path(CACertFile), certPEM, 0o644); err != nil {
		return nil, err
	}
	return &CA{Cert: cert, CertPEM: certPEM, key: key}, nil
}

// servingCertCovers reports whether the serving certificate on disk was signed by ca, names
// every host and stays valid for a while yet.
func (d Dir) servingCertCovers(ca *CA, hosts []string) bool {
	data, err := os.ReadFile(d.Path(ServingCertFile))
	if err != nil {
		return false
	}
	if _, err := os.Stat(d.Path(ServingKeyFile)); err != nil {
		return false
	}
	certs, err := certutil.ParseCertsPEM(data)
	if err != nil || certs[0].CheckSignatureFrom(ca.Cert) != nil {
		return false
	}
	if time.Until(certs[0].NotAfter) < renewBefore {
		return false
	}
	for _, h := range hosts {
		if certs[0].VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

func parseCA(certPEM, keyPEM []byte) (*CA, error) {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New("CA key cannot sign")
	}
	return &CA{Cert: certs[0], CertPEM: certPEM, key: signer}, nil
}

// Issue signs a new key pair for the template and returns the certificate and key as PEM. The
// template's serial number, validity and key are filled in here.
func (ca *CA) Issue(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), serialNumberLen))
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-backdate)
	tmpl.NotAfter = time.Now().Add(leafValidity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	if certPEM, err = certutil.EncodeCertificates(cert); err != nil {
		return nil, nil, err
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	return certPEM, keyPEM, err
}

// ClientTemplate is a client certificate for user in groups, as kube's x509 authenticator reads
// one: the common name is the user, each organization a group.
func ClientTemplate(user string, groups []string) *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
}

func servingTemplate(hosts []string) *x509.Certificate {
	t := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "sqlkube"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			t.IPAddresses = append(t.IPAddresses, ip)
		} else if !slices.Contains(t.DNSNames, h) {
			t.DNSNames = append(t.DNSNames, h)
		}
	}
	return t
}

// newKey makes an ECDSA P-256 key: as strong as RSA 3072 for TLS and far cheaper to handshake.
func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// writeFile replaces path atomically, so that a process reading it (a replica starting, the
// certificate reloader) never sees half a file.
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
