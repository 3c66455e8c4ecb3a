package app

import (
	"bytes"
	"context"
	"crypto"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/sqlkube/sqlkube/server/apiserver"
	"github.com/sqlkube/sqlkube/server/auth"
	"github.com/sqlkube/sqlkube/server/pki"
	"github.com/sqlkube/sqlkube/server/serviceaccount"
	"github.com/sqlkube/sqlkube/server/serviceaccount/tokenrequest"
)

// secureServing is what serving over TLS needs, ready before the API starts.
type secureServing struct {
	tls *tls.Config
	// mintingCA is the CA in --cert-dir when it also verifies client certificates: sqlkube
	// mints credentials with it (admin kubeconfig, sqlkube kubeconfig); nil otherwise.
	mintingCA []byte
	// clientCA verifies client certificates, with the bundle as it is on disk now.
	clientCA x509.VerifyOptionFunc
	// caBundle is the CA clients verify the serving certificate with, published in every
	// namespace as kube-root-ca.crt; nil when the serving certificate was given.
	caBundle []byte
}

// prepareSecureServing makes or loads the certificates, starts reloading them when they change
// on disk (until ctx ends), and writes the admin kubeconfig when sqlkube holds the CA that
// signs both the serving and the client certificates.
func prepareSecureServing(ctx context.Context, c securityConfig, listen net.Addr, log *slog.Logger) (*secureServing, error) {
	certFile, keyFile, clientCAFile := c.TLSCertFile, c.TLSKeyFile, c.ClientCAFile
	var ca *pki.CA
	var err error
	switch {
	case c.KubeCertificates:
		if certFile == "" {
			certFile, keyFile, err = kubeServingPair(c.CertDir, servingHosts(listen, c.TLSSANs))
		}
	case certFile == "" || clientCAFile == "":
		dir := pki.Dir(c.CertDir)
		if ca, err = dir.Ensure(servingHosts(listen, c.TLSSANs)); err != nil {
			return nil, fmt.Errorf("certificates in %s: %w", c.CertDir, err)
		}
		if certFile == "" {
			certFile, keyFile = dir.Path(pki.ServingCertFile), dir.Path(pki.ServingKeyFile)
		}
		if clientCAFile == "" {
			clientCAFile = dir.Path(pki.CACertFile)
		}
	}
	if err != nil {
		return nil, err
	}
	serving, err := dynamiccertificates.NewDynamicServingContentFromFiles("serving-cert", certFile, keyFile)
	if err != nil {
		return nil, err
	}
	go serving.Run(ctx, 1)
	cfg, err := tlsConfig(c, serving)
	if err != nil {
		return nil, err
	}
	s := &secureServing{tls: cfg}
	// Only kube-apiserver's certificate handling leaves no client CA: no client certificates.
	if clientCAFile != "" {
		clientCA, err := dynamiccertificates.NewDynamicCAContentFromFile("client-ca-bundle", clientCAFile)
		if err != nil {
			return nil, err
		}
		go clientCA.Run(ctx, 1)
		s.clientCA = clientCA.VerifyOptions
	}
	if ca != nil && c.TLSCertFile == "" {
		s.caBundle = ca.CertPEM
	}
	if ca != nil && c.ClientCAFile == "" {
		s.mintingCA = ca.CertPEM
	}
	return s, writeAdminKubeconfig(c, ca, listen, log)
}

// kubeServingPair is kube-apiserver's serving certificate without --tls-cert-file:
// apiserver.crt and apiserver.key in certDir as found (envtest writes them, signed by its own
// CA), or a self-signed pair for hosts written there when either is missing.
func kubeServingPair(certDir string, hosts []string) (certFile, keyFile string, err error) {
	dir := pki.Dir(certDir)
	certFile, keyFile = dir.Path(pki.ServingCertFile), dir.Path(pki.ServingKeyFile)
	if canRead(certFile) && canRead(keyFile) {
		return certFile, keyFile, nil
	}
	var ips []net.IP
	var names []string
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			names = append(names, h)
		}
	}
	// servingHosts starts with localhost: the certificate's subject, as kube-apiserver's is its
	// public address.
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(names[0], ips, names[1:])
	if err == nil {
		err = certutil.WriteCert(certFile, certPEM)
	}
	if err == nil {
		err = keyutil.WriteKey(keyFile, keyPEM)
	}
	if err != nil {
		return "", "", fmt.Errorf("self-signed serving certificate in %s: %w", certDir, err)
	}
	return certFile, keyFile, nil
}

func canRead(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	return f.Close() == nil
}

// writeAdminKubeconfig writes a fresh system:masters kubeconfig at every start, so that it never
// outlives its certificate; it needs the CA that signs both sides.
func writeAdminKubeconfig(c securityConfig, ca *pki.CA, listen net.Addr, log *slog.Logger) error {
	if c.AdminKubeconfig == "" {
		return nil
	}
	if ca == nil || c.TLSCertFile != "" || c.ClientCAFile != "" {
		log.Info("not writing an admin kubeconfig: the certificates were given, sqlkube does not hold their CA")
		return nil
	}
	data, err := ca.Kubeconfig(serverURL(listen), "system:admin", []string{"system:masters"})
	if err != nil {
		return err
	}
	if err := pki.WriteKubeconfig(c.AdminKubeconfig, data); err != nil {
		return err
	}
	log.Info("wrote the admin kubeconfig", "path", c.AdminKubeconfig)
	return nil
}

// tlsConfig serves TLS 1.2+ (or --tls-min-version) with HTTP/2, the serving certificate as it is
// on disk now, and asks for (without requiring) a client certificate: the authenticator checks
// it, so that requests without one can still present a token or be anonymous.
func tlsConfig(c securityConfig, serving *dynamiccertificates.DynamicCertKeyPairContent) (*tls.Config, error) {
	minVersion, err := cliflag.TLSVersion(c.TLSMinVersion)
	if err != nil {
		return nil, fmt.Errorf("--tls-min-version: %w", err)
	}
	suites, err := cliflag.TLSCipherSuites(c.TLSCipherSuites)
	if err != nil {
		return nil, fmt.Errorf("--tls-cipher-suites: %w", err)
	}
	cert := &currentCertificate{content: serving}
	return &tls.Config{
		MinVersion:     minVersion,
		CipherSuites:   suites,
		NextProtos:     []string{"h2", "http/1.1"},
		ClientAuth:     tls.RequestClientCert,
		GetCertificate: cert.get,
	}, nil
}

// currentCertificate hands each handshake the serving certificate as last loaded from disk,
// parsing it again only when it changed.
type currentCertificate struct {
	content *dynamiccertificates.DynamicCertKeyPairContent
	mu      sync.Mutex
	certPEM []byte
	cert    *tls.Certificate
}

func (c *currentCertificate) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	certPEM, keyPEM := c.content.CurrentCertKeyContent()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cert != nil && bytes.Equal(certPEM, c.certPEM) {
		return c.cert, nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	c.certPEM, c.cert = certPEM, &cert
	return c.cert, nil
}

// prepareSecurity readies TLS serving, or warns that --plain-http serves without it.
func prepareSecurity(ctx context.Context, c securityConfig, listen net.Addr, log *slog.Logger) (*secureServing, error) {
	if c.PlainHTTP {
		log.Warn("--plain-http: serving plain HTTP and treating every request as an admin; for development only")
		return nil, nil
	}
	return prepareSecureServing(ctx, c, listen, log)
}

// options are the server's authentication and authorization. JWT issuers' keys are fetched in
// the background until ctx ends.
func (s *secureServing) options(ctx context.Context, c securityConfig) (*apiserver.Security, error) {
	jwt, err := jwtAuthenticators(ctx, c.AuthenticationConfig, []string{c.SAIssuer})
	if err != nil {
		return nil, err
	}
	sa, err := serviceAccounts(c)
	if err != nil {
		return nil, err
	}
	return &apiserver.Security{
		RootCA:          s.caBundle,
		ServiceAccounts: sa,
		Authentication: auth.Authentication{
			ClientCA:      s.clientCA,
			TokenAuthFile: c.TokenAuthFile,
			JWT:           jwt,
			Anonymous:     c.AnonymousAuth,
		},
		AuthorizationModes: c.AuthorizationModes,
		APIAudiences:       c.APIAudiences,
	}, nil
}

// jwtAuthenticators verifies the tokens of the issuers in the --authentication-config file, if
// any. No issuer may claim to be one of disallowedIssuers (the ServiceAccount issuer).
func jwtAuthenticators(ctx context.Context, path string, disallowedIssuers []string) ([]authenticator.Token, error) {
	if path == "" {
		return nil, nil
	}
	cfg, err := auth.LoadAuthenticationConfig(path, disallowedIssuers)
	if err != nil {
		return nil, fmt.Errorf("--authentication-config: %w", err)
	}
	return auth.JWTAuthenticators(ctx, cfg, disallowedIssuers)
}

// serviceAccounts loads the ServiceAccount token keys. Without a signing key (PostgreSQL with
// certificates given and no --cert-dir) the server issues and verifies no ServiceAccount tokens.
func serviceAccounts(c securityConfig) (*tokenrequest.ServiceAccounts, error) {
	if c.SASigningKeyFile == "" {
		return nil, nil
	}
	key, err := serviceaccount.LoadSigningKey(c.SASigningKeyFile)
	if err != nil {
		return nil, fmt.Errorf("--service-account-signing-key-file: %w", err)
	}
	keys := []crypto.PublicKey{key.Public()}
	if len(c.SAKeyFiles) > 0 {
		if keys, err = serviceaccount.PublicKeys(c.SAKeyFiles); err != nil {
			return nil, fmt.Errorf("--service-account-key-file: %w", err)
		}
	}
	return &tokenrequest.ServiceAccounts{Issuer: c.SAIssuer, SigningKey: key, PublicKeys: keys,
		JWKSURI: c.SAJWKSURI, MaxExpiration: c.SAMaxExpiration}, nil
}
