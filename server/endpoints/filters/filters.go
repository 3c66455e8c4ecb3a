// Package filters is kube-apiserver's filter chain around the API's routes, from
// k8s.io/apiserver's filters: request info, the request log, deadlines, authentication, audit,
// impersonation, in-flight limits or priority and fairness, and authorization. It answers what
// it refuses itself (401, 403, 429, 504) and knows nothing of the routes inside it.
package filters

import (
	"log/slog"
	"net/http"

	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/filters/impersonation"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/sqlkube/sqlkube/server/auditlog"
)

// StatusCodecs encode the Status of a refused request (401, 403) in the media type the client
// asked for, as kube-apiserver's filters do; they are the audit log's, which records the same.
var StatusCodecs = auditlog.Codecs

// RequestInfoResolver reads verb, API group, resource, namespace and name from a request as
// kube-apiserver does, for the authorizer.
var RequestInfoResolver = &genericrequest.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// Config is what the chain needs: who and what to log, audit, limit, authenticate and authorize.
type Config struct {
	Log *slog.Logger
	// RequestLogLevel is the level of the line logged for each request answered below 500.
	RequestLogLevel slog.Level
	Audit           auditlog.Config
	Limits          Limits
	Authenticator   authenticator.Request
	Audiences       authenticator.Audiences
	Authorizer      authorizer.Authorizer
	// FlowControl is priority and fairness; nil applies the two plain in-flight limits.
	FlowControl utilflowcontrol.Interface
}

// Chain is kube-apiserver's filter chain around next, in its order: request info, the request
// log, the request's deadline (504 past it), then authentication (401 for credentials no
// authenticator accepts), then auditing, then impersonation (the Impersonate-* headers, each
// asked of the authorizer for the real user, as kube 1.37 does with constrained impersonation
// on), then the in-flight limit or priority and fairness (429), then authorization (403 with
// kube's message).
func Chain(next http.Handler, c Config) http.Handler {
	h := genericfilters.WithAuthorization(next, c.Authorizer, StatusCodecs)
	h = OverloadProtection(h, c)
	h = impersonation.WithConstrainedImpersonation(h, c.Authorizer, StatusCodecs)
	h = c.Audit.WithAudit(h, LongRunning)
	h = withLoggedUser(h)
	h = genericfilters.WithAuthentication(h, c.Authenticator, c.Audit.Unauthorized(), c.Audiences, nil)
	h = Timeouts(h, c)
	h = withLogging(h, c)
	h = genericfilters.WithRequestInfo(h, RequestInfoResolver)
	return genericfilters.WithRequestReceivedTimestamp(h)
}
