package server

import (
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/sqlkube/sqlkube/server/auth"
)

// statusCodecs encode the Status of a refused request (401, 403) in the media type the client
// asked for, as kube-apiserver's filters do.
var statusCodecs = func() runtime.NegotiatedSerializer {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(scheme).WithoutConversion()
}()

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
	// APIAudiences are the audiences a bearer token must be meant for (--api-audiences).
	APIAudiences authenticator.Audiences
}

// withAuth is kube-apiserver's filter chain around the API: request info, then authentication
// (401 for credentials no authenticator accepts), then authorization (403 with kube's message).
// Without Security every request is an unsecured admin (--plain-http).
func (s *Server) withAuth(next http.Handler) (http.Handler, error) {
	authn, authz, audiences := auth.Unsecured, auth.RuleAuthorizer(authorizerfactory.NewAlwaysAllowAuthorizer()), authenticator.Audiences(nil)
	if sec := s.opts.Security; sec != nil {
		var err error
		if authn, err = auth.NewAuthenticator(sec.Authentication); err != nil {
			return nil, err
		}
		if authz, err = auth.NewAuthorizer(sec.AuthorizationModes, s.rbac); err != nil {
			return nil, err
		}
		audiences = sec.APIAudiences
	}
	s.authorizer, s.ruleResolver = authz, authz
	h := genericfilters.WithAuthorization(next, authz, statusCodecs)
	h = genericfilters.WithAuthentication(h, authn, genericfilters.Unauthorized(statusCodecs), audiences, nil)
	return genericfilters.WithRequestInfo(h, requestInfoResolver), nil
}
