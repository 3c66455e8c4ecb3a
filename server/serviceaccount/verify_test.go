package serviceaccount

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
)

const issuerURL = "https://sqlkube.test"

// objects is a Lookup over a map of "resource/namespace/name" to uid.
type objects map[string]string

func (o objects) UID(_ context.Context, resource, namespace, name string) (string, error) {
	if uid, ok := o[resource+"/"+namespace+"/"+name]; ok {
		return uid, nil
	}
	return "", apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestVerifier(t *testing.T) {
	key, otherKey := newKey(t), newKey(t)
	issuer, err := NewIssuer(issuerURL, key)
	if err != nil {
		t.Fatal(err)
	}
	stranger, _ := NewIssuer(issuerURL, otherKey)
	elsewhere, _ := NewIssuer("https://elsewhere", key)
	bot := Ref{Name: "bot", UID: "uid-bot"}
	store := objects{"serviceaccounts/demo/bot": "uid-bot", "secrets/demo/s": "uid-s"}
	mint := func(i *Issuer, req Request) string {
		tok, _, err := i.Issue(req)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	base := Request{Namespace: "demo", ServiceAccount: bot, Audiences: []string{issuerURL}, Expiry: time.Hour}
	with := func(change func(*Request)) Request { r := base; change(&r); return r }
	tests := []struct {
		name    string
		token   string
		lookup  objects
		wantOK  bool
		wantErr bool
	}{
		{"valid", mint(issuer, base), store, true, false},
		{"bound to an existing secret", mint(issuer, with(func(r *Request) { r.Secret = &Ref{Name: "s", UID: "uid-s"} })), store, true, false},
		{"expired", mint(issuer, with(func(r *Request) { r.Expiry = -2 * leeway })), store, false, true},
		{"other audience", mint(issuer, with(func(r *Request) { r.Audiences = []string{"vault"} })), store, false, true},
		{"signed by another key", mint(stranger, base), store, false, true},
		{"another issuer: no opinion", mint(elsewhere, base), store, false, false},
		{"not a JWT: no opinion", "abc.def", store, false, false},
		{"service account deleted", mint(issuer, base), objects{}, false, true},
		{"service account recreated", mint(issuer, base), objects{"serviceaccounts/demo/bot": "uid-new"}, false, true},
		{"bound secret deleted", mint(issuer, with(func(r *Request) { r.Secret = &Ref{Name: "gone", UID: "x"} })), store, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := NewVerifier(issuerURL, []crypto.PublicKey{key.Public()}, tc.lookup)
			ctx := authenticator.WithAudiences(context.Background(), authenticator.Audiences{issuerURL})
			resp, ok, err := v.AuthenticateToken(ctx, tc.token)
			if ok != tc.wantOK || (err != nil) != tc.wantErr {
				t.Fatalf("ok %v err %v, want ok %v, error %v", ok, err, tc.wantOK, tc.wantErr)
			}
			if !ok {
				return
			}
			u := resp.User
			if u.GetName() != "system:serviceaccount:demo:bot" || u.GetUID() != "uid-bot" ||
				len(u.GetGroups()) != 2 || u.GetGroups()[1] != "system:serviceaccounts:demo" {
				t.Errorf("user %+v", u)
			}
		})
	}
}

// FuzzAuthenticateToken: whatever the bearer token, the verifier answers without panicking and
// never accepts a token it did not sign.
func FuzzAuthenticateToken(f *testing.F) {
	key := newKey(f)
	issuer, _ := NewIssuer(issuerURL, key)
	valid, _, _ := issuer.Issue(Request{Namespace: "demo", ServiceAccount: Ref{Name: "bot", UID: "u"}, Audiences: []string{issuerURL}, Expiry: time.Hour})
	f.Add(valid)
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJub25lIn0.eyJpc3MiOiJodHRwczovL3NxbGt1YmUudGVzdCJ9.")
	f.Add("")
	v := NewVerifier(issuerURL, []crypto.PublicKey{key.Public()}, objects{"serviceaccounts/demo/bot": "u"})
	f.Fuzz(func(t *testing.T, token string) {
		_, ok, _ := v.AuthenticateToken(context.Background(), token)
		if ok && token != valid {
			t.Fatalf("accepted a token it did not issue: %q", token)
		}
	})
}
