package auth

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
)

// bearing is a request with the token and no other credential, as TokenReview asks.
func bearing(token string) *http.Request {
	req := &http.Request{Header: http.Header{}}
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}

// TestTokenReviewAuthenticator: what TokenReview asks authenticates a token as kube-apiserver's
// chain does (the user joins system:authenticated), refuses another in kube's words even when
// anonymous requests are allowed, and is nil without bearer-token authentication.
func TestTokenReviewAuthenticator(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(file, []byte("good,alice,a1,devs\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, reviews, err := NewAuthenticator(Authentication{TokenAuthFile: file, Anonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	resp, ok, err := reviews.AuthenticateRequest(bearing("good"))
	if !ok || err != nil || resp.User.GetName() != "alice" || !slices.Equal(resp.User.GetGroups(), []string{"devs", user.AllAuthenticated}) {
		t.Errorf("good token: %+v, %v, %v; want alice in devs and %s", resp, ok, err, user.AllAuthenticated)
	}
	resp, ok, err = reviews.AuthenticateRequest(bearing("bad"))
	if ok || resp != nil || err == nil || err.Error() != "invalid bearer token" {
		t.Errorf("bad token: %+v, %v, %v; want kube's invalid bearer token", resp, ok, err)
	}
	if _, reviews, _ := NewAuthenticator(Authentication{Anonymous: true}); reviews != nil {
		t.Error("without bearer-token authentication, token reviews have an authenticator")
	}
}
