package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	jose "gopkg.in/go-jose/go-jose.v2"
	"gopkg.in/go-jose/go-jose.v2/jwt"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// oidcIssuer is a real HTTPS OpenID Connect issuer: discovery document, key set, and tokens
// signed with its key.
type oidcIssuer struct {
	srv *httptest.Server
	key *ecdsa.PrivateKey
}

func startOIDCIssuer(t *testing.T) *oidcIssuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	iss := &oidcIssuer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": iss.srv.URL, "jwks_uri": iss.srv.URL + "/keys",
			"id_token_signing_alg_values_supported": []string{"ES256"}, "response_types_supported": []string{"id_token"},
			"subject_types_supported": []string{"public"}})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	})
	iss.srv = httptest.NewTLSServer(mux)
	t.Cleanup(iss.srv.Close)
	return iss
}

// token signs an ID token for subject with groups, meant for audience.
func (i *oidcIssuer) token(t *testing.T, subject, audience string, groups []string, expiry time.Duration) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: i.key, KeyID: "k1"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok, err := jwt.Signed(signer).Claims(jwt.Claims{Issuer: i.srv.URL, Subject: subject, Audience: jwt.Audience{audience},
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(expiry))}).
		Claims(map[string]any{"groups": groups}).CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// authenticationConfig writes kube's AuthenticationConfiguration for the issuer: audience
// sqlkube, users "oidc:<sub>", groups "oidc:<group>".
func (i *oidcIssuer) authenticationConfig(t *testing.T) string {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: i.srv.Certificate().Raw})
	caJSON, _ := json.Marshal(string(ca))
	config := fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: %s
    audiences: [sqlkube]
    certificateAuthority: %s
  claimMappings:
    username: {claim: sub, prefix: "oidc:"}
    groups: {claim: groups, prefix: "oidc:"}
`, i.srv.URL, caJSON)
	path := filepath.Join(t.TempDir(), "authn.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOIDCIssuer: an ID token of a configured issuer authenticates with its claims mapped as
// the AuthenticationConfiguration says; one for another audience, or expired, is 401.
func TestOIDCIssuer(t *testing.T) {
	iss := startOIDCIssuer(t)
	forEachServerWith(t, []string{"--authentication-config=" + iss.authenticationConfig(t)}, func(t *testing.T, s *sqlkubeServer) {
		token := iss.token(t, "jane", "sqlkube", []string{"platform"}, time.Hour)
		jane := kubernetes.NewForConfigOrDie(s.tokenConfig(token))
		var review *authenticationv1.SelfSubjectReview
		eventually(t, 20*time.Second, "the issuer's keys are fetched and the token accepted", func() (bool, error) {
			var err error
			review, err = jane.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			return err == nil, err
		})
		if got := review.Status.UserInfo; got.Username != "oidc:jane" || !slices.Equal(got.Groups, []string{"oidc:platform", "system:authenticated"}) {
			t.Errorf("whoami: %+v, want oidc:jane in [oidc:platform system:authenticated]", got)
		}
		c := s.anonymousClient(t)
		for name, bad := range map[string]string{
			"other audience": iss.token(t, "jane", "vault", nil, time.Hour),
			"expired":        iss.token(t, "jane", "sqlkube", nil, -time.Hour),
		} {
			if r := get(t, c, s.URL()+"/api", "Authorization", "Bearer "+bad); r.code != http.StatusUnauthorized {
				t.Errorf("%s token: %d, want 401", name, r.code)
			}
		}
	})
}
