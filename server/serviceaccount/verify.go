package serviceaccount

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"strings"
	"time"

	jose "gopkg.in/go-jose/go-jose.v2"
	"gopkg.in/go-jose/go-jose.v2/jwt"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	saauth "k8s.io/apiserver/pkg/authentication/serviceaccount"
	jwtauth "k8s.io/apiserver/pkg/authentication/token/jwt"
	"k8s.io/apiserver/pkg/authentication/user"
)

// leeway is the clock skew tolerated on exp, nbf and iat, as kube's validator allows.
const leeway = time.Minute

// Lookup finds the uids of the objects a token names; the verifier owns this interface.
type Lookup interface {
	// UID is the uid of the object of resource ("serviceaccounts" or "secrets") in namespace,
	// or a NotFound error.
	UID(ctx context.Context, resource, namespace, name string) (string, error)
}

// Verifier authenticates ServiceAccount tokens of one issuer. It is an authenticator.Token: a
// token of another issuer, or not a JWT, is no opinion, so that other authenticators may try.
type Verifier struct {
	issuer string
	keys   []crypto.PublicKey
	lookup Lookup
	now    func() time.Time
}

// NewVerifier verifies tokens of issuer signed by one of keys.
func NewVerifier(issuer string, keys []crypto.PublicKey, lookup Lookup) *Verifier {
	return &Verifier{issuer: issuer, keys: keys, lookup: lookup, now: time.Now}
}

// AuthenticateToken checks the signature, issuer, audiences (the request's API audiences) and
// times, then that the ServiceAccount and any bound Secret, Pod or Node still exist with the uids the token
// names.
func (v *Verifier) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	parsed, err := jwt.ParseSigned(token)
	if err != nil {
		return nil, false, nil // not a JWT: another authenticator's token
	}
	var unverified jwt.Claims
	if err := parsed.UnsafeClaimsWithoutVerification(&unverified); err != nil || unverified.Issuer != v.issuer {
		return nil, false, nil
	}
	public, private, err := v.verifiedClaims(parsed)
	if err != nil {
		return nil, false, err
	}
	if err := public.ValidateWithLeeway(jwt.Expected{Issuer: v.issuer, Time: v.now()}, leeway); err != nil {
		return nil, false, fmt.Errorf("service account token %w", err)
	}
	audiences, err := acceptedAudiences(ctx, public.Audience)
	if err != nil {
		return nil, false, err
	}
	k := private.Kubernetes
	if public.Subject != Username(k.Namespace, k.ServiceAccount.Name) {
		return nil, false, errors.New("service account token: subject does not match its kubernetes.io claims")
	}
	if err := v.stillBound(ctx, k); err != nil {
		return nil, false, err
	}
	return &authenticator.Response{Audiences: audiences, User: userInfo(k, public.ID)}, true, nil
}

// userInfo is the token's user as kube's ServiceAccountInfo makes it: its extra names the bound
// Pod and its Node (or the bound Node) and the credential id.
func userInfo(k kubernetesClaims, jti string) user.Info {
	info := saauth.ServiceAccountInfo{Namespace: k.Namespace, Name: k.ServiceAccount.Name, UID: k.ServiceAccount.UID,
		CredentialID: jwtauth.CredentialIDForJTI(jti)}
	if k.Pod != nil {
		info.PodName, info.PodUID = k.Pod.Name, k.Pod.UID
	}
	if k.Node != nil {
		info.NodeName, info.NodeUID = k.Node.Name, k.Node.UID
	}
	return info.UserInfo()
}

func (v *Verifier) verifiedClaims(parsed *jwt.JSONWebToken) (*jwt.Claims, *privateClaims, error) {
	var public jwt.Claims
	var private privateClaims
	for _, key := range v.keys {
		if err := parsed.Claims(key, &public, &private); err == nil {
			return &public, &private, nil
		}
	}
	return nil, nil, errors.New("service account token: invalid signature")
}

// acceptedAudiences are the token's audiences the server accepts; none in common is an error.
func acceptedAudiences(ctx context.Context, tokenAudiences jwt.Audience) (authenticator.Audiences, error) {
	apiAudiences, ok := authenticator.AudiencesFrom(ctx)
	if !ok || len(apiAudiences) == 0 {
		return authenticator.Audiences(tokenAudiences), nil
	}
	common := apiAudiences.Intersect(authenticator.Audiences(tokenAudiences))
	if len(common) == 0 {
		return nil, errors.New("service account token: token audiences " + strings.Join(tokenAudiences, ",") + " are not accepted")
	}
	return common, nil
}

// stillBound fails when the token's ServiceAccount or bound object is gone or was recreated.
// A Pod-bound token's Node is information only: it is not checked, as in kube.
func (v *Verifier) stillBound(ctx context.Context, k kubernetesClaims) error {
	if err := v.sameUID(ctx, "serviceaccounts", k.Namespace, k.ServiceAccount); err != nil {
		return err
	}
	switch {
	case k.Secret != nil:
		return v.boundExists(ctx, "secret", "secrets", k.Namespace, *k.Secret)
	case k.Pod != nil:
		return v.boundExists(ctx, "pod", "pods", k.Namespace, *k.Pod)
	case k.Node != nil:
		return v.boundExists(ctx, "node", "nodes", "", *k.Node)
	}
	return nil
}

func (v *Verifier) sameUID(ctx context.Context, resource, namespace string, ref Ref) error {
	uid, err := v.lookup.UID(ctx, resource, namespace, ref.Name)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s/%s has been deleted", resource, namespace, ref.Name)
	}
	if err != nil {
		return err
	}
	if uid != ref.UID {
		return fmt.Errorf("%s %s/%s UID (%s) does not match claim (%s)", resource, namespace, ref.Name, uid, ref.UID)
	}
	return nil
}

// boundExists checks the object a token is bound to, with kube's messages: any failure to read
// it invalidates the token.
func (v *Verifier) boundExists(ctx context.Context, kind, resource, namespace string, ref Ref) error {
	uid, err := v.lookup.UID(ctx, resource, namespace, ref.Name)
	if err != nil {
		return errors.New("service account token has been invalidated")
	}
	if uid != ref.UID {
		return fmt.Errorf("%s UID (%s) does not match service account %s ref claim (%s)", kind, uid, kind, ref.UID)
	}
	return nil
}

// keySet is the public keys as a JSON Web Key Set, for /openid/v1/jwks.
func keySet(keys []crypto.PublicKey) (jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	for _, k := range keys {
		alg, err := algorithm(k)
		if err != nil {
			return set, err
		}
		kid, err := KeyID(k)
		if err != nil {
			return set, err
		}
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k, KeyID: kid, Algorithm: string(alg), Use: "sig"})
	}
	return set, nil
}
