package reviews

import (
	"context"
	"errors"
	"reflect"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// recordingAuthorizer answers every question with its decision, and keeps the last one asked.
type recordingAuthorizer struct {
	decision authorizer.Decision
	reason   string
	err      error
	asked    authorizer.Attributes
}

func (a *recordingAuthorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	a.asked = attrs
	return a.decision, a.reason, a.err
}

// fixedRules grants every user the same rules, and says whom and where it was asked about.
type fixedRules struct {
	err             error
	user, namespace string
}

func (f *fixedRules) RulesFor(_ context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	f.user, f.namespace = u.GetName(), namespace
	return []authorizer.ResourceRuleInfo{&authorizer.DefaultResourceRuleInfo{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"p"}}},
		[]authorizer.NonResourceRuleInfo{&authorizer.DefaultNonResourceRuleInfo{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}},
		f.err != nil, f.err
}

// oneToken authenticates the token "good" as alice, for the audiences asked, and no other.
type oneToken struct{}

func (oneToken) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	if token != "good" {
		return nil, false, nil
	}
	audiences, _ := authenticator.AudiencesFrom(ctx)
	return &authenticator.Response{Audiences: audiences, User: &user.DefaultInfo{Name: "alice", UID: "a1",
		Groups: []string{"devs"}, Extra: map[string][]string{"scopes": {"x"}}}}, true, nil
}

var alice = &user.DefaultInfo{Name: "alice", Groups: []string{"devs", user.AllAuthenticated}}

func asAlice() context.Context { return genericrequest.WithUser(context.Background(), alice) }

func podGet(namespace string) *authorizationv1.ResourceAttributes {
	return &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "get", Group: "apps", Version: "v1", Resource: "deployments", Subresource: "scale", Name: "d"}
}

func wantStatus(t *testing.T, err error, code int32) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != code {
		t.Fatalf("error %v, want a Status with code %d", err, code)
	}
}

// TestSelfSubjectAccessReview: the requester's question goes to the authorizer as asked, and
// its decision, reason and error are the status.
func TestSelfSubjectAccessReview(t *testing.T) {
	authz := &recordingAuthorizer{decision: authorizer.DecisionDeny, reason: "no", err: errors.New("partial")}
	rv := New(authorizer.AuthorizerFunc(authz.Authorize), nil, nil)
	got, err := rv.SelfSubjectAccessReview(asAlice(), &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: podGet("ns")}})
	if err != nil {
		t.Fatal(err)
	}
	want := authorizer.AttributesRecord{User: alice, Verb: "get", Namespace: "ns", APIGroup: "apps", APIVersion: "v1",
		Resource: "deployments", Subresource: "scale", Name: "d", ResourceRequest: true}
	if !reflect.DeepEqual(authz.asked, want) {
		t.Errorf("asked %+v, want %+v", authz.asked, want)
	}
	if st := got.Status; st.Allowed || !st.Denied || st.Reason != "no" || st.EvaluationError != "partial" {
		t.Errorf("status %+v", st)
	}
	if got.Kind != "SelfSubjectAccessReview" || got.APIVersion != "authorization.k8s.io/v1" {
		t.Errorf("kind %s %s", got.APIVersion, got.Kind)
	}
	nonResource := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/healthz"}}}
	authz.decision, authz.err = authorizer.DecisionAllow, nil
	if got, err := rv.SelfSubjectAccessReview(context.Background(), nonResource); err != nil || !got.Status.Allowed {
		t.Errorf("non-resource review: %+v, %v", got, err)
	}
	if authz.asked.GetUser().GetName() != user.Anonymous || authz.asked.IsResourceRequest() || authz.asked.GetPath() != "/healthz" {
		t.Errorf("without a user, asked %+v, want anonymous's non-resource question", authz.asked)
	}
	for name, spec := range map[string]authorizationv1.SelfSubjectAccessReviewSpec{
		"neither": {},
		"both":    {ResourceAttributes: podGet(""), NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get"}},
	} {
		if _, err := rv.SelfSubjectAccessReview(asAlice(), &authorizationv1.SelfSubjectAccessReview{Spec: spec}); !apierrors.IsInvalid(err) {
			t.Errorf("%s attributes: %v, want Invalid", name, err)
		}
	}
}

// TestSubjectAccessReview: the question is about the user the review names, not the requester.
func TestSubjectAccessReview(t *testing.T) {
	authz := &recordingAuthorizer{decision: authorizer.DecisionAllow}
	rv := New(authorizer.AuthorizerFunc(authz.Authorize), nil, nil)
	spec := authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: podGet("ns"), User: "bob", UID: "b1",
		Groups: []string{"ops"}, Extra: map[string]authorizationv1.ExtraValue{"scopes": {"y"}}}
	got, err := rv.SubjectAccessReview(asAlice(), &authorizationv1.SubjectAccessReview{Spec: spec})
	if err != nil || !got.Status.Allowed || got.Kind != "SubjectAccessReview" {
		t.Fatalf("%+v, %v", got, err)
	}
	want := &user.DefaultInfo{Name: "bob", UID: "b1", Groups: []string{"ops"}, Extra: map[string][]string{"scopes": {"y"}}}
	if !reflect.DeepEqual(authz.asked.GetUser(), want) {
		t.Errorf("asked about %+v, want %+v", authz.asked.GetUser(), want)
	}
	_, err = rv.SubjectAccessReview(asAlice(), &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: podGet("ns")}})
	wantStatus(t, err, 422)
	if causes := err.(apierrors.APIStatus).Status().Details.Causes; len(causes) != 1 || causes[0].Field != "spec.user" {
		t.Errorf("causes %+v, want one about spec.user", causes)
	}
}

// TestLocalSubjectAccessReview: the review must ask about resources in the namespace it is
// posted in.
func TestLocalSubjectAccessReview(t *testing.T) {
	authz := &recordingAuthorizer{decision: authorizer.DecisionAllow}
	rv := New(authorizer.AuthorizerFunc(authz.Authorize), nil, nil)
	review := func(attrs *authorizationv1.ResourceAttributes) *authorizationv1.LocalSubjectAccessReview {
		return &authorizationv1.LocalSubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: attrs, User: "bob"}}
	}
	got, err := rv.LocalSubjectAccessReview(asAlice(), "ns", review(podGet("ns")))
	if err != nil || !got.Status.Allowed || got.Kind != "LocalSubjectAccessReview" || authz.asked.GetNamespace() != "ns" {
		t.Fatalf("%+v, %v; asked %+v", got, err, authz.asked)
	}
	_, err = rv.LocalSubjectAccessReview(asAlice(), "ns", review(podGet("other")))
	wantStatus(t, err, 400)
	_, err = rv.LocalSubjectAccessReview(asAlice(), "ns", &authorizationv1.LocalSubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get"}, User: "bob"}})
	wantStatus(t, err, 400)
}

// TestSelfSubjectRulesReview lists the requester's rules in the namespace asked, and says when
// they are incomplete.
func TestSelfSubjectRulesReview(t *testing.T) {
	rules := &fixedRules{}
	rv := New(nil, rules, nil)
	got, err := rv.SelfSubjectRulesReview(asAlice(), &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "ns"}})
	if err != nil {
		t.Fatal(err)
	}
	if rules.user != "alice" || rules.namespace != "ns" {
		t.Errorf("asked about %s in %s", rules.user, rules.namespace)
	}
	want := authorizationv1.SubjectRulesReviewStatus{
		ResourceRules:    []authorizationv1.ResourceRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"p"}}},
		NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}},
	}
	if !reflect.DeepEqual(got.Status, want) || got.Kind != "SelfSubjectRulesReview" || got.Spec.Namespace != "" {
		t.Errorf("answer %+v, want status %+v and an empty spec", got, want)
	}
	rules.err = errors.New("a role binding names a missing role")
	got, _ = rv.SelfSubjectRulesReview(asAlice(), &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "ns"}})
	if !got.Status.Incomplete || got.Status.EvaluationError != rules.err.Error() {
		t.Errorf("status %+v, want incomplete with the error", got.Status)
	}
	_, err = rv.SelfSubjectRulesReview(asAlice(), &authorizationv1.SelfSubjectRulesReview{})
	if !apierrors.IsBadRequest(err) || err.Error() != "no namespace on request" {
		t.Errorf("without a namespace: %v, want 400 no namespace on request", err)
	}
}

// TestTokenReview authenticates the token for the audiences asked as a request bearing it:
// the user joins system:authenticated, and a token no one accepts is kube's invalid bearer token.
func TestTokenReview(t *testing.T) {
	rv := New(nil, nil, group.NewAuthenticatedGroupAdder(bearertoken.New(oneToken{})))
	got, err := rv.TokenReview(context.Background(), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "good", Audiences: []string{"api"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := authenticationv1.TokenReviewStatus{Authenticated: true, Audiences: []string{"api"}, User: authenticationv1.UserInfo{
		Username: "alice", UID: "a1", Groups: []string{"devs", user.AllAuthenticated}, Extra: map[string]authenticationv1.ExtraValue{"scopes": {"x"}}}}
	if !reflect.DeepEqual(got.Status, want) || got.Kind != "TokenReview" {
		t.Errorf("status %+v, want %+v", got.Status, want)
	}
	got, err = rv.TokenReview(context.Background(), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "bad"}})
	if err != nil || got.Status.Authenticated || got.Status.Error != "invalid bearer token" {
		t.Errorf("bad token: %+v, %v", got.Status, err)
	}
	_, err = rv.TokenReview(context.Background(), &authenticationv1.TokenReview{})
	wantStatus(t, err, 400)
	got, err = New(nil, nil, nil).TokenReview(context.Background(), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "good"}})
	if err != nil || got.Status.Authenticated || got.Kind != "TokenReview" {
		t.Errorf("without bearer-token authentication: %+v, %v", got, err)
	}
}

// TestSelfSubjectReview tells the requester who they are; anonymous without a user.
func TestSelfSubjectReview(t *testing.T) {
	rv := New(nil, nil, nil)
	got, err := rv.SelfSubjectReview(asAlice(), &authenticationv1.SelfSubjectReview{})
	if err != nil || got.Status.UserInfo.Username != "alice" || !reflect.DeepEqual(got.Status.UserInfo.Groups, alice.Groups) ||
		got.CreationTimestamp.IsZero() || got.Kind != "SelfSubjectReview" {
		t.Errorf("%+v, %v", got, err)
	}
	got, _ = rv.SelfSubjectReview(context.Background(), &authenticationv1.SelfSubjectReview{})
	if got.Status.UserInfo.Username != user.Anonymous {
		t.Errorf("without a user: %+v, want anonymous", got.Status.UserInfo)
	}
}
