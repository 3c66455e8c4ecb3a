package endpoints

import (
	"net/http"

	"k8s.io/apimachinery/pkg/util/sets"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/filters/impersonation"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/sqlkube/sqlkube/server/auditlog"
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

// withFilters are kube-apiserver's filter chain around the API, in its order: request info, the
// request log, the request's deadline (504 past it), then authentication (401 for credentials no
// authenticator accepts), then auditing, then impersonation (the Impersonate-* headers, each asked of the
// authorizer for the real user, as kube 1.37 does with constrained impersonation on), then the
// in-flight limit or priority and fairness (429), then authorization (403 with kube's message).
func (s *Server) withFilters(next http.Handler) http.Handler {
	authz := s.api.Authorizer
	h := genericfilters.WithAuthorization(next, authz, statusCodecs)
	h = s.withOverloadProtection(h)
	h = impersonation.WithConstrainedImpersonation(h, authz, statusCodecs)
	h = s.opts.Audit.WithAudit(h, longRunning)
	h = withLoggedUser(h)
	h = genericfilters.WithAuthentication(h, s.api.Authenticator, s.opts.Audit.Unauthorized(), s.api.Audiences, nil)
	h = s.withTimeouts(h)
	h = s.withLogging(h)
	h = genericfilters.WithRequestInfo(h, requestInfoResolver)
	return genericfilters.WithRequestReceivedTimestamp(h)
}
