package tokenrequest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"

	"github.com/sqlkube/sqlkube/server/serviceaccount"
)

const issuerURL = "https://sqlkube.test"

// objects is an Objects over a map of "resource/namespace/name" to uid.
type objects map[string]string

func (o objects) UID(_ context.Context, resource, namespace, name string) (string, error) {
	if uid, ok := o[resource+"/"+namespace+"/"+name]; ok {
		return uid, nil
	}
	return "", apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}

// stored are a ServiceAccount and a Secret of namespace demo.
func stored() objects {
	return objects{"serviceaccounts/demo/bot": "uid-bot", "secrets/demo/s": "uid-s"}
}

// newIssuing issues tokens with a new key, capped at max, naming objs; the verifier checks them
// with the same key against objs.
func newIssuing(t *testing.T, max time.Duration, objs objects) (*Issuing, *serviceaccount.Verifier) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sa := &ServiceAccounts{Issuer: issuerURL, SigningKey: key, PublicKeys: []crypto.PublicKey{key.Public()}, MaxExpiration: max}
	issuing, err := New(sa, []string{"api"}, objs)
	if err != nil {
		t.Fatal(err)
	}
	return issuing, serviceaccount.NewVerifier(issuerURL, sa.PublicKeys, objs)
}

func seconds(n int64) *int64 { return &n }

// TestIssueDefaults: a request naming no audience or lifetime gets the API's audiences and an
// hour; the token verifies as the ServiceAccount, for those audiences.
func TestIssueDefaults(t *testing.T) {
	issuing, verifier := newIssuing(t, 0, stored())
	before := time.Now()
	tr, err := issuing.Issue(context.Background(), "demo", "bot", &authenticationv1.TokenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Spec.Audiences) != 1 || tr.Spec.Audiences[0] != "api" || *tr.Spec.ExpirationSeconds != 3600 {
		t.Errorf("spec %+v, want the API's audience and an hour", tr.Spec)
	}
	if exp := tr.Status.ExpirationTimestamp.Time; exp.Before(before.Add(59*time.Minute)) || exp.After(time.Now().Add(61*time.Minute)) {
		t.Errorf("expires %v, want in an hour", exp)
	}
	if tr.Name != "bot" || tr.Namespace != "demo" || tr.UID != "uid-bot" || tr.Kind != "TokenRequest" || tr.APIVersion != "authentication.k8s.io/v1" {
		t.Errorf("answer %s/%s uid %q %s %s, want the ServiceAccount's uid", tr.Namespace, tr.Name, tr.UID, tr.APIVersion, tr.Kind)
	}
	ctx := authenticator.WithAudiences(context.Background(), authenticator.Audiences{"api"})
	resp, ok, err := verifier.AuthenticateToken(ctx, tr.Status.Token)
	if !ok || err != nil || resp.User.GetName() != "system:serviceaccount:demo:bot" || resp.User.GetUID() != "uid-bot" {
		t.Errorf("token verified as %+v, %v, %v; want the ServiceAccount", resp, ok, err)
	}
}

// TestIssueLifetime: a lifetime under ten minutes is Invalid; one over the cap is shortened.
func TestIssueLifetime(t *testing.T) {
	issuing, _ := newIssuing(t, 2*time.Hour, stored())
	_, err := issuing.Issue(context.Background(), "demo", "bot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: seconds(599)}})
	if !apierrors.IsInvalid(err) {
		t.Errorf("599 s: %v, want Invalid", err)
	}
	tr, err := issuing.Issue(context.Background(), "demo", "bot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: seconds(86400)}})
	if err != nil || *tr.Spec.ExpirationSeconds != 7200 {
		t.Errorf("a day under a two-hour cap: %v, %v; want 7200 s", tr, err)
	}
	tr, err = issuing.Issue(context.Background(), "demo", "bot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: seconds(600)}})
	if err != nil || *tr.Spec.ExpirationSeconds != 600 {
		t.Errorf("ten minutes: %v, %v", tr, err)
	}
}

// TestIssueBound: a token may be bound to an existing Secret, named by its uid or not; other
// kinds, other uids and missing objects are refused.
func TestIssueBound(t *testing.T) {
	objs := stored()
	issuing, verifier := newIssuing(t, 0, objs)
	bound := func(ref authenticationv1.BoundObjectReference) (*authenticationv1.TokenRequest, error) {
		return issuing.Issue(context.Background(), "demo", "bot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &ref}})
	}
	tr, err := bound(authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "s", UID: "uid-s"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := authenticator.WithAudiences(context.Background(), authenticator.Audiences{"api"})
	if _, ok, err := verifier.AuthenticateToken(ctx, tr.Status.Token); !ok || err != nil {
		t.Errorf("bound token: %v, %v", ok, err)
	}
	delete(objs, "secrets/demo/s")
	if _, ok, _ := verifier.AuthenticateToken(ctx, tr.Status.Token); ok {
		t.Error("a token bound to a deleted Secret still verifies: the binding was not recorded")
	}
	objs["secrets/demo/s"] = "uid-s"
	if _, err := bound(authenticationv1.BoundObjectReference{Kind: "Secret", Name: "s"}); err != nil {
		t.Errorf("bound by name alone: %v", err)
	}
	for name, tc := range map[string]struct {
		ref  authenticationv1.BoundObjectReference
		want func(error) bool
	}{
		"a Pod":            {authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p"}, apierrors.IsBadRequest},
		"another version":  {authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v2", Name: "s"}, apierrors.IsBadRequest},
		"another uid":      {authenticationv1.BoundObjectReference{Kind: "Secret", Name: "s", UID: "uid-old"}, apierrors.IsConflict},
		"a missing Secret": {authenticationv1.BoundObjectReference{Kind: "Secret", Name: "gone"}, apierrors.IsNotFound},
	} {
		if _, err := bound(tc.ref); !tc.want(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := issuing.Issue(context.Background(), "demo", "nobody", &authenticationv1.TokenRequest{}); !apierrors.IsNotFound(err) {
		t.Errorf("a missing ServiceAccount: %v, want NotFound", err)
	}
}

// TestIssueOtherUID: a request naming a uid other than the ServiceAccount's is a Conflict, in
// kube's words (its TokenRequestServiceAccountUIDValidation, on by default).
func TestIssueOtherUID(t *testing.T) {
	issuing, _ := newIssuing(t, 0, stored())
	tr := &authenticationv1.TokenRequest{}
	tr.UID = "uid-old"
	_, err := issuing.Issue(context.Background(), "demo", "bot", tr)
	want := `Operation cannot be fulfilled on TokenRequest.authentication.k8s.io "bot": the UID in the token request (uid-old) does not match the UID of the service account (uid-bot)`
	if !apierrors.IsConflict(err) || err.Error() != want {
		t.Errorf("error %v, want Conflict %s", err, want)
	}
}
