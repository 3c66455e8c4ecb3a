package server

import (
	"net/http"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/filters/impersonation"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/sqlkube/sqlkube/server/auditlog"
	"github.com/sqlkube/sqlkube/server/auth"
	"github.com/sqlkube/sqlkube/server/reviews"
	"github.com/sqlkube/sqlkube/server/serviceaccount/tokenrequest"
)

// statusCodecs encode the Status of a refused request (401, 403) in the media type the client
// asked for, as kube-apiserver's filters do; they are the audit log's, which records the same.
var statusCodecs = auditlog.Codecs

// requestInfoResolver reads verb, API group, resource, namespace and name from a request as
// kube-apiserver does, for the authorizer.
var requestInfoResolver = &genericrequest.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// Security is how a server authenticates and authorizes requests, from kube-apiserver's flags.
type Security struct {
	Authentication auth.Authentication
	// AuthorizationModes are the authorizers, in order (--authorization-mode).
	AuthorizationModes []string
	// APIAudiences are the audiences a bearer token must be meant for (--api-audiences); the
	// ServiceAccount issuer when empty.
	APIAudiences authenticator.Audiences
	// RootCA is the CA bundle that verifies the serving certificate, published in every
	// namespace as the kube-root-ca.crt ConfigMap; nil when unknown.
	RootCA []byte
	// ServiceAccounts issues and verifies ServiceAccount tokens; nil for neither.
	ServiceAccounts *tokenrequest.ServiceAccounts
}

// authFilters are kube-apiserver's filter chain around the API, in its order: request info, the
// request log, the request's deadline (504 past it), then authentication (401 for credentials no
// authenticator accepts), then auditing, then impersonation (the Impersonate-* headers, each asked of the
// authorizer for the real user, as kube 1.37 does with constrained impersonation on), then the
// in-flight limit or priority and fairness (429), then authorization (403 with kube's message).
// Without Security every request is an unsecured admin (--plain-http).
// It sets up the server's authorizer, the reviews and TokenRequest first, so that it runs
// before routes.
func (s *Server) authFilters() (func(http.Handler) http.Handler, error) {
	authn, authz, audiences := auth.Unsecured, auth.RuleAuthorizer(authorizerfactory.NewAlwaysAllowAuthorizer()), authenticator.Audiences(nil)
	var tokenReviewer authenticator.Token // nil without bearer-token authentication
	if sec := s.opts.Security; sec != nil {
		authentication, err := s.withServiceAccountTokens(sec)
		if err != nil {
			return nil, err
		}
		if authn, tokenReviewer, err = auth.NewAuthenticator(authentication); err != nil {
			return nil, err
		}
		if authz, err = auth.NewAuthorizer(sec.AuthorizationModes, s.rbac); err != nil {
			return nil, err
		}
		audiences = sec.APIAudiences
		if len(audiences) == 0 && sec.ServiceAccounts != nil {
			audiences = authenticator.Audiences{sec.ServiceAccounts.Issuer}
		}
	}
	s.authorizer, s.escalation.Authorizer = authz, authz
	s.reviews = reviews.New(authz, authz, tokenReviewer)
	return func(next http.Handler) http.Handler {
		h := genericfilters.WithAuthorization(next, authz, statusCodecs)
		h = s.withOverloadProtection(h)
		h = impersonation.WithConstrainedImpersonation(h, authz, statusCodecs)
		h = s.opts.Audit.WithAudit(h, longRunning)
		h = withLoggedUser(h)
		h = genericfilters.WithAuthentication(h, authn, s.opts.Audit.Unauthorized(), audiences, nil)
		h = s.withTimeouts(h)
		h = s.withLogging(h)
		h = genericfilters.WithRequestInfo(h, requestInfoResolver)
		return genericfilters.WithRequestReceivedTimestamp(h)
	}, nil
}
