// Package auth builds the authenticator and authorizer of kube-apiserver's filter chain from
// sqlkube's flags, out of k8s.io/apiserver's own parts: x509 client certificates, a static token
// file, ServiceAccount tokens, JWT issuers of an AuthenticationConfiguration, anonymous requests;
// and the authorizer modes. It knows nothing of HTTP routing or storage.
package auth

import (
	"net/http"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/request/x509"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/authentication/user"
)

// tokenSuccessTTL is how long a verified bearer token's user is remembered, as kube-apiserver's
// token cache does: a request then costs a map lookup instead of a signature check. A revoked
// token (its ServiceAccount deleted) keeps working for at most this long. Failures are not
// cached, so a token that becomes valid works at once.
const tokenSuccessTTL = 10 * time.Second

// Authentication says how requests are authenticated, as kube-apiserver's flags do.
type Authentication struct {
	// ClientCA verifies client certificates (--client-ca-file); nil accepts none.
	ClientCA x509.VerifyOptionFunc
	// TokenAuthFile is a static token file in kube's CSV format (--token-auth-file); "" for none.
	TokenAuthFile string
	// ServiceAccountTokens verifies ServiceAccount tokens; nil for none.
	ServiceAccountTokens authenticator.Token
	// JWT verifies tokens of the issuers of --authentication-config; nil for none.
	JWT []authenticator.Token
	// Anonymous lets requests without credentials in as system:anonymous (--anonymous-auth).
	Anonymous bool
}

// NewAuthenticator chains the configured authenticators in kube-apiserver's order: client
// certificate, then bearer tokens (static file, ServiceAccount, JWT issuers). A request with
// credentials none of them accepts is refused (401), never treated as anonymous; a request
// with no credentials is anonymous if allowed. Authenticated users join system:authenticated.
// It also returns what TokenReview asks (nil without bearer-token authentication): the chain a
// request bearing a token and nothing else meets in kube-apiserver, whose users join
// system:authenticated and whose unknown tokens are kube's "invalid bearer token" (never
// anonymous: the bearer-token authenticator fails first).
func NewAuthenticator(a Authentication) (auth, tokenReviews authenticator.Request, err error) {
	var requestAuths []authenticator.Request
	if a.ClientCA != nil {
		requestAuths = append(requestAuths, newCachedCertificates(a.ClientCA, x509.CommonNameUserConversion))
	}
	tokens, err := newTokenAuthenticator(a)
	if err != nil {
		return nil, nil, err
	}
	if tokens != nil {
		bearer := bearertoken.New(tokens)
		requestAuths = append(requestAuths, bearer)
		tokenReviews = group.NewAuthenticatedGroupAdder(bearer)
	}
	auth = group.NewAuthenticatedGroupAdder(union.New(requestAuths...))
	if a.Anonymous {
		auth = union.NewFailOnError(auth, anonymous.NewAuthenticator(nil))
	}
	return auth, tokenReviews, nil
}

// newTokenAuthenticator is the bearer-token part of the chain (static file, ServiceAccount
// tokens, JWT issuers) behind kube's token cache; nil when none is configured.
func newTokenAuthenticator(a Authentication) (authenticator.Token, error) {
	tokens, err := tokenAuthenticators(a)
	if err != nil || len(tokens) == 0 {
		return nil, err
	}
	return tokencache.New(tokenunion.New(tokens...), true, tokenSuccessTTL, 0), nil
}

func tokenAuthenticators(a Authentication) ([]authenticator.Token, error) {
	var tokens []authenticator.Token
	if a.TokenAuthFile != "" {
		file, err := tokenfile.NewCSV(a.TokenAuthFile)
		if err != nil {
			return nil, err
		}
		tokens = append(tokens, file)
	}
	if a.ServiceAccountTokens != nil {
		tokens = append(tokens, a.ServiceAccountTokens)
	}
	return append(tokens, a.JWT...), nil
}

// Unsecured authenticates every request as a member of system:masters: what --plain-http
// serves, for development only.
var Unsecured authenticator.Request = authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
	return &authenticator.Response{User: unsecuredUser}, true, nil
})

var unsecuredUser = &user.DefaultInfo{Name: "system:unsecured", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
