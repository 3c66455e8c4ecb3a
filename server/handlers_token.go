package server

import (
	"net/http"

	"github.com/gorilla/mux"
	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/sqlkube/sqlkube/server/serviceaccount"
)

// routeServiceAccountTokens adds TokenRequest and the issuer discovery documents.
func (s *Server) routeServiceAccountTokens(m *mux.Router) {
	if s.api.Tokens == nil {
		return
	}
	docs := s.api.Tokens.Discovery()
	m.Path("/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token").HandlerFunc(s.review("serviceaccounts", s.tokenRequest))
	m.Path("/.well-known/openid-configuration").HandlerFunc(s.onlyGet(serveBytes(docs.OpenIDConfiguration, "application/json")))
	m.Path(serviceaccount.JWKSPath).HandlerFunc(s.onlyGet(serveBytes(docs.JWKS, "application/jwk-set+json")))
}

func serveBytes(body []byte, contentType string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(body)
	}
}

// tokenRequest answers POST .../serviceaccounts/NAME/token: tokenrequest mints the token.
func (s *Server) tokenRequest(r *http.Request, body []byte) (any, error) {
	tr := &authenticationv1.TokenRequest{}
	if err := decodeReview(body, tr); err != nil {
		return nil, err
	}
	vars := mux.Vars(r)
	return s.api.Tokens.Issue(r.Context(), vars["namespace"], vars["name"], tr)
}
