package auth

import (
	"crypto/sha256"
	"crypto/x509"
	"net/http"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
)

// certificateSuccessTTL is how long a verified client certificate chain's user is remembered,
// as long as the token cache remembers a token's. Verifying the chain is an ECDSA or RSA
// signature check on every request (kube-apiserver's x509 authenticator caches nothing): 14% of
// the server's CPU for creates with an admin certificate.
const certificateSuccessTTL = tokenSuccessTTL

// maxCachedCertificates bounds the cache; only chains the client CA verified get in, so a client
// can't fill it with certificates of its own making. Past the bound the cache starts over.
const maxCachedCertificates = 4096

// cachedCertificates remembers the users of client certificate chains that verified. An entry is
// used only while the client CA that verified it is the current one (a reloaded --client-ca-file
// makes every entry stale), before its TTL, and before the leaf certificate expires. Failures are
// not cached: they are rare, and refused with 401 anyway.
type cachedCertificates struct {
	next     authenticator.Request
	clientCA x509request.VerifyOptionFunc
	now      func() time.Time

	mu      sync.Mutex
	entries map[[sha256.Size]byte]certificateEntry
}

type certificateEntry struct {
	roots   *x509.CertPool
	expires time.Time
	resp    *authenticator.Response
}

func newCachedCertificates(clientCA x509request.VerifyOptionFunc, conv x509request.UserConversion) *cachedCertificates {
	return &cachedCertificates{
		next:     x509request.NewDynamic(clientCA, conv),
		clientCA: clientCA,
		now:      time.Now,
		entries:  map[[sha256.Size]byte]certificateEntry{},
	}
}

// AuthenticateRequest answers from the cache for a chain verified recently against the current
// client CA, and asks kube's x509 authenticator otherwise.
func (c *cachedCertificates) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	opts, ok := c.clientCA()
	if !ok {
		return nil, false, nil
	}
	key := chainKey(req.TLS.PeerCertificates)
	now := c.now()
	c.mu.Lock()
	entry, hit := c.entries[key]
	c.mu.Unlock()
	if hit && entry.roots == opts.Roots && now.Before(entry.expires) {
		return entry.resp, true, nil
	}
	resp, ok, err := c.next.AuthenticateRequest(req)
	if !ok || err != nil {
		return resp, ok, err
	}
	expires := now.Add(certificateSuccessTTL)
	if leafEnd := req.TLS.PeerCertificates[0].NotAfter; leafEnd.Before(expires) {
		expires = leafEnd
	}
	c.mu.Lock()
	if len(c.entries) >= maxCachedCertificates {
		c.entries = map[[sha256.Size]byte]certificateEntry{}
	}
	c.entries[key] = certificateEntry{roots: opts.Roots, expires: expires, resp: resp}
	c.mu.Unlock()
	return resp, true, nil
}

// chainKey identifies a presented chain: the leaf and the intermediates the client sent with it.
func chainKey(chain []*x509.Certificate) [sha256.Size]byte {
	h := sha256.New()
	for _, cert := range chain {
		h.Write(cert.Raw)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}
