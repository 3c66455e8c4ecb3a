package endpoints_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/sqlkube/sqlkube/server/apiserver"
	"github.com/sqlkube/sqlkube/server/auth"
	"github.com/sqlkube/sqlkube/server/endpoints"
	"github.com/sqlkube/sqlkube/server/serviceaccount"
	"github.com/sqlkube/sqlkube/server/serviceaccount/tokenrequest"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// TestTokenRequestRoutes: a server issuing ServiceAccount tokens serves TokenRequest (201 with a
// token it then accepts, 404 for a missing ServiceAccount) and the issuer's discovery documents.
func TestTokenRequestRoutes(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sa := &tokenrequest.ServiceAccounts{Issuer: "https://sqlkube.test", SigningKey: key, PublicKeys: []crypto.PublicKey{key.Public()}}
	api := newTestAPI(t, sqltest.SQLiteDSN(t), apiserver.Options{Security: &apiserver.Security{Authentication: auth.Authentication{Anonymous: true},
		AuthorizationModes: []string{auth.ModeAlwaysAllow}, ServiceAccounts: sa}})
	api.do("POST", "/api/v1/namespaces/default/serviceaccounts", `{"metadata":{"name":"bot"}}`).expect(t, http.StatusCreated)
	resp := api.do("POST", "/api/v1/namespaces/default/serviceaccounts/bot/token", `{}`).expect(t, http.StatusCreated)
	var tr authenticationv1.TokenRequest
	if err := json.Unmarshal(resp.body, &tr); err != nil || tr.Status.Token == "" || tr.Kind != "TokenRequest" {
		t.Fatalf("answer %s (%v), want a TokenRequest with a token", resp.body, err)
	}
	resp = api.do("POST", endpoints.AuthenticationPrefix+"selfsubjectreviews", `{}`, "Authorization: Bearer "+tr.Status.Token).expect(t, http.StatusCreated)
	var self authenticationv1.SelfSubjectReview
	if err := json.Unmarshal(resp.body, &self); err != nil || self.Status.UserInfo.Username != "system:serviceaccount:default:bot" {
		t.Errorf("the token's user: %s (%v)", resp.body, err)
	}
	api.do("POST", "/api/v1/namespaces/default/serviceaccounts/nobody/token", `{}`).expect(t, http.StatusNotFound)
	api.do("GET", "/api/v1/namespaces/default/serviceaccounts/bot/token", "").expect(t, http.StatusMethodNotAllowed)
	if resp := api.do("GET", "/.well-known/openid-configuration", "").expect(t, http.StatusOK); resp.header.Get("Content-Type") != "application/json" {
		t.Errorf("discovery content type %q", resp.header.Get("Content-Type"))
	}
	api.do("GET", serviceaccount.JWKSPath, "").expect(t, http.StatusOK)
}
