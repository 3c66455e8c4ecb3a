package tokenrequest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"

	"github.com/sqlkube/sqlkube/server/serviceaccount"
)

const issuerURL = "https://sqlkube.test"

// objects is an Objects over a map of "resource/namespace/name" to uid; a Pod's service
// account and node are in pods, by "namespace/name".
type objects struct {
	uids map[string]string
	pods map[string]Pod
}

func (o objects) UID(_ context.Context, resource, namespace, name string) (string, error) {
	if uid, ok := o.uids[resource+"/"+namespace+"/"+name]; ok {
		return uid, nil
	}
	return "", apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}

func (o objects) Pod(ctx context.Context, namespace, name string) (Pod, error) {
	uid, err := o.UID(ctx, "pods", namespace, name)
	pod := o.pods[namespace+"/"+name]
	pod.UID = uid
	return pod, err
}

// stored are a ServiceAccount, a Secret, a Pod of bot on Node n1 and one of another
// ServiceAccount of namespace demo, and Node n1.
func stored() objects {
	return objects{
		uids: map[string]string{"serviceaccounts/demo/bot": "uid-bot", "secrets/demo/s": "uid-s",
			"pods/demo/p": "uid-p", "pods/demo/other": "uid-other", "nodes//n1": "uid-n1"},
		pods: map[string]Pod{"demo/p": {ServiceAccountName: "bot", NodeName: "n1"}, "demo/other": {ServiceAccountName: "default"}},
	}
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
	delete(objs.uids, "secrets/demo/s")
	if _, ok, _ := verifier.AuthenticateToken(ctx, tr.Status.Token); ok {
		t.Error("a token bound to a deleted Secret still verifies: the binding was not recorded")
	}
	objs.uids["secrets/demo/s"] = "uid-s"
	if _, err := bound(authenticationv1.BoundObjectReference{Kind: "Secret", Name: "s"}); err != nil {
		t.Errorf("bound by name alone: %v", err)
	}
	for name, tc := range map[string]struct {
		ref  authenticationv1.BoundObjectReference
		want func(error) bool
	}{
		"another group":    {authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "apps/v1", Name: "s"}, apierrors.IsBadRequest},
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

// claims is the kubernetes.io claims of a token, unverified.
func claims(t *testing.T, token string) map[string]any {
	t.Helper()
	payload, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[1])
	if err != nil {
		t.Fatal(err)
	}
	var all map[string]any
	if err := json.Unmarshal(payload, &all); err != nil {
		t.Fatal(err)
	}
	return all["kubernetes.io"].(map[string]any)
}

// TestIssuePodAndNode: a token bound to a Pod names it and its Node, one bound to a Node names
// the Node, as kube's claims and user extra do; each stops verifying, in kube's words, once its
// object is deleted or recreated.
func TestIssuePodAndNode(t *testing.T) {
	objs := stored()
	issuing, verifier := newIssuing(t, 0, objs)
	ctx := authenticator.WithAudiences(context.Background(), authenticator.Audiences{"api"})
	for _, tc := range []struct {
		ref       authenticationv1.BoundObjectReference
		key       string // in objs.uids
		claims    string
		extra     string
		deleted   string
		recreated string
	}{
		{authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p", UID: "uid-p"}, "pods/demo/p",
			`"node":{"name":"n1","uid":"uid-n1"},"pod":{"name":"p","uid":"uid-p"}`,
			`authentication.kubernetes.io/node-name:[n1] authentication.kubernetes.io/node-uid:[uid-n1] authentication.kubernetes.io/pod-name:[p] authentication.kubernetes.io/pod-uid:[uid-p]`,
			"service account token has been invalidated", "pod UID (uid-new) does not match service account pod ref claim (uid-p)"},
		{authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "n1"}, "nodes//n1",
			`"node":{"name":"n1","uid":"uid-n1"}`,
			`authentication.kubernetes.io/node-name:[n1] authentication.kubernetes.io/node-uid:[uid-n1]`,
			"service account token has been invalidated", "node UID (uid-new) does not match service account node ref claim (uid-n1)"},
	} {
		tr, err := issuing.Issue(context.Background(), "demo", "bot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &tc.ref}})
		if err != nil {
			t.Fatalf("%s: %v", tc.ref.Kind, err)
		}
		k := claims(t, tr.Status.Token)
		delete(k, "namespace")
		delete(k, "serviceaccount")
		if got, _ := json.Marshal(k); string(got) != "{"+tc.claims+"}" {
			t.Errorf("%s claims %s, want {%s}", tc.ref.Kind, got, tc.claims)
		}
		resp, ok, err := verifier.AuthenticateToken(ctx, tr.Status.Token)
		if !ok || err != nil {
			t.Fatalf("%s: %v, %v", tc.ref.Kind, ok, err)
		}
		extra := resp.User.GetExtra()
		if id := extra["authentication.kubernetes.io/credential-id"]; len(id) != 1 || !strings.HasPrefix(id[0], "JTI=") {
			t.Errorf("%s credential id %v", tc.ref.Kind, id)
		}
		delete(extra, "authentication.kubernetes.io/credential-id")
		if got := fmt.Sprint(extra); got != "map["+tc.extra+"]" {
			t.Errorf("%s extra %s, want map[%s]", tc.ref.Kind, got, tc.extra)
		}
		uid := objs.uids[tc.key]
		delete(objs.uids, tc.key)
		if _, ok, err := verifier.AuthenticateToken(ctx, tr.Status.Token); ok || err == nil || err.Error() != tc.deleted {
			t.Errorf("%s deleted: %v, %v; want %q", tc.ref.Kind, ok, err, tc.deleted)
		}
		objs.uids[tc.key] = "uid-new"
		if _, ok, err := verifier.AuthenticateToken(ctx, tr.Status.Token); ok || err == nil || err.Error() != tc.recreated {
			t.Errorf("%s recreated: %v, %v; want %q", tc.ref.Kind, ok, err, tc.recreated)
		}
		objs.uids[tc.key] = uid
	}
}

// TestIssuePodOnMissingNode: a Pod's Node that does not exist is named without a uid, as kube.
func TestIssuePodOnMissingNode(t *testing.T) {
	objs := stored()
	delete(objs.uids, "nodes//n1")
	issuing, verifier := newIssuing(t, 0, objs)
	tr, err := issuing.Issue(context.Background(), "demo", "bot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(claims(t, tr.Status.Token)["node"]); string(got) != `{"name":"n1"}` {
		t.Errorf("node claim %s", got)
	}
	resp, ok, err := verifier.AuthenticateToken(context.Background(), tr.Status.Token)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	if extra := resp.User.GetExtra(); fmt.Sprint(extra["authentication.kubernetes.io/node-name"], extra["authentication.kubernetes.io/node-uid"]) != "[n1] []" {
		t.Errorf("extra %v", extra)
	}
}

// TestIssueBindErrors: kube's errors for a binding it refuses.
func TestIssueBindErrors(t *testing.T) {
	issuing, _ := newIssuing(t, 0, stored())
	for _, tc := range []struct {
		ref  authenticationv1.BoundObjectReference
		code int32
		want string
	}{
		{authenticationv1.BoundObjectReference{Kind: "ConfigMap", APIVersion: "v1", Name: "c"}, 400, "cannot bind token to object of type /v1, Kind=ConfigMap"},
		{authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "apps/v1", Name: "p"}, 400, "cannot bind token to object of type apps/v1, Kind=Pod"},
		{authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "other"}, 400, `cannot bind token for serviceaccount "bot" to pod running with different serviceaccount name.`},
		{authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p", UID: "uid-old"}, 409,
			`Operation cannot be fulfilled on Pod "p": the UID in the bound object reference (uid-old) does not match the UID in record. The object might have been deleted and then recreated`},
		{authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "n1", UID: "uid-old"}, 409,
			`Operation cannot be fulfilled on Node "n1": the UID in the bound object reference (uid-old) does not match the UID in record. The object might have been deleted and then recreated`},
		{authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "gone"}, 404, `pods "gone" not found`},
		{authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "gone"}, 404, `nodes "gone" not found`},
	} {
		_, err := issuing.Issue(context.Background(), "demo", "bot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &tc.ref}})
		if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != tc.code || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %d %q", tc.ref, err, tc.code, tc.want)
		}
	}
}
