// Package serviceaccount issues and verifies ServiceAccount tokens as kube-apiserver does: bound
// JWTs (TokenRequest) signed with the --service-account-signing-key-file key, carrying the
// "kubernetes.io" claims that name the namespace, the ServiceAccount and any object the token
// is bound to (a Secret, Pod or Node). A token stops authenticating when its ServiceAccount (or
// bound object) is deleted or replaced by one of the same name. It also serves the issuer's discovery documents.
package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"time"

	jose "gopkg.in/go-jose/go-jose.v2"
	"gopkg.in/go-jose/go-jose.v2/jwt"
)

// Ref names an object a token is bound to, by name and uid (either left out when empty, as kube).
type Ref struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// kubernetesClaims are the private claims kube writes under "kubernetes.io".
type kubernetesClaims struct {
	Namespace      string           `json:"namespace"`
	ServiceAccount Ref              `json:"serviceaccount"`
	Pod            *Ref             `json:"pod,omitempty"`
	Secret         *Ref             `json:"secret,omitempty"`
	Node           *Ref             `json:"node,omitempty"`
	WarnAfter      *jwt.NumericDate `json:"warnafter,omitempty"`
}

type privateClaims struct {
	Kubernetes kubernetesClaims `json:"kubernetes.io"`
}

// Request is what a TokenRequest asks for.
type Request struct {
	Namespace      string
	ServiceAccount Ref
	// Pod, Secret or Node is the object the token is bound to, if any: the token dies with
	// it. A Pod-bound token also names the Pod's Node (its uid empty if the Node is missing),
	// which is information only.
	Pod       *Ref
	Secret    *Ref
	Node      *Ref
	Audiences []string
	Expiry    time.Duration
	// ID is the token's unique id, its jti claim, which the audit log and the authenticated
	// user's credential id name.
	ID string
}

// Issuer signs tokens.
type Issuer struct {
	issuer string
	signer jose.Signer
	now    func() time.Time
}

// NewIssuer signs tokens as issuer with key (RSA or ECDSA).
func NewIssuer(issuer string, key crypto.Signer) (*Issuer, error) {
	alg, err := algorithm(key.Public())
	if err != nil {
		return nil, err
	}
	kid, err := KeyID(key.Public())
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, err
	}
	return &Issuer{issuer: issuer, signer: signer, now: time.Now}, nil
}

// Issue mints a token for the request and returns it with its expiry.
func (i *Issuer) Issue(req Request) (string, time.Time, error) {
	now := i.now()
	expires := now.Add(req.Expiry)
	public := jwt.Claims{
		Issuer:    i.issuer,
		Subject:   Username(req.Namespace, req.ServiceAccount.Name),
		Audience:  jwt.Audience(req.Audiences),
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		Expiry:    jwt.NewNumericDate(expires),
		ID:        req.ID,
	}
	private := privateClaims{Kubernetes: kubernetesClaims{Namespace: req.Namespace, ServiceAccount: req.ServiceAccount,
		Pod: req.Pod, Secret: req.Secret, Node: req.Node}}
	token, err := jwt.Signed(i.signer).Claims(public).Claims(private).CompactSerialize()
	return token, expires, err
}

// Username is a ServiceAccount's user name: system:serviceaccount:NAMESPACE:NAME.
func Username(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// KeyID is kube's key id for a public key: the unpadded base64url SHA-256 of its DER form.
func KeyID(public crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(public)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

func algorithm(public crypto.PublicKey) (jose.SignatureAlgorithm, error) {
	switch k := public.(type) {
	case *rsa.PublicKey:
		return jose.RS256, nil
	case *ecdsa.PublicKey:
		switch k.Curve.Params().BitSize {
		case 256:
			return jose.ES256, nil
		case 384:
			return jose.ES384, nil
		case 521:
			return jose.ES512, nil
		}
	}
	return "", fmt.Errorf("unsupported ServiceAccount signing key %T", public)
}
