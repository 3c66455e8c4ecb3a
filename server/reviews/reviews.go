// Package reviews answers the review APIs, create-only resources that answer a question about
// the requester or another user and store nothing, as kube-apiserver answers them: access reviews
// (SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectAccessReview,
// SelfSubjectRulesReview), asked of the authorizer, and authentication reviews (TokenReview,
// SelfSubjectReview). Resources lists them, each answered by a resource.Creater the HTTP layer
// calls with the posted body; errors are apimachinery Status errors.
package reviews

import (
	"context"
	"fmt"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// Reviewer answers the reviews. The self reviews are about the requester, the user ctx carries
// (genericrequest.WithUser; anonymous without one). Each method fills in the review's status
// and kind and returns it, or a Status error for a review kube would refuse.
type Reviewer struct {
	authorizer authorizer.Authorizer
	rules      authorizer.RuleResolver
	tokens     authenticator.Request
}

// New answers access reviews with authz, rules reviews with rules, and token reviews with
// tokens, what authenticates a request bearing a token and nothing else (kube's TokenReview asks
// its whole chain: users join system:authenticated); tokens may be nil, without bearer-token
// authentication: token reviews are then answered unauthenticated.
func New(authz authorizer.Authorizer, rules authorizer.RuleResolver, tokens authenticator.Request) *Reviewer {
	return &Reviewer{authorizer: authz, rules: rules, tokens: tokens}
}

// requester is the user ctx carries, anonymous without one.
func requester(ctx context.Context) user.Info {
	if u, ok := genericrequest.UserFrom(ctx); ok {
		return u
	}
	return &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
}

// SelfSubjectAccessReview answers whether the requester may do what the review asks.
func (rv *Reviewer) SelfSubjectAccessReview(ctx context.Context, review *authorizationv1.SelfSubjectAccessReview) (*authorizationv1.SelfSubjectAccessReview, error) {
	if (review.Spec.ResourceAttributes == nil) == (review.Spec.NonResourceAttributes == nil) {
		return nil, invalidReview("SelfSubjectAccessReview", oneOfAttributes)
	}
	review.Status = rv.accessReviewStatus(ctx, attributesFor(requester(ctx), review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes))
	review.SetGroupVersionKind(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"))
	return review, nil
}

// SubjectAccessReview answers whether the user the review names may do what it asks.
func (rv *Reviewer) SubjectAccessReview(ctx context.Context, review *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error) {
	if err := validateSubjectAccessReview("SubjectAccessReview", &review.Spec); err != nil {
		return nil, err
	}
	review.Status = rv.accessReviewStatus(ctx, attributesFor(reviewedUser(&review.Spec), review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes))
	review.SetGroupVersionKind(authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview"))
	return review, nil
}

// LocalSubjectAccessReview is SubjectAccessReview posted in namespace, about resources in it
// only.
func (rv *Reviewer) LocalSubjectAccessReview(ctx context.Context, namespace string, review *authorizationv1.LocalSubjectAccessReview) (*authorizationv1.LocalSubjectAccessReview, error) {
	if err := validateSubjectAccessReview("LocalSubjectAccessReview", &review.Spec); err != nil {
		return nil, err
	}
	if review.Spec.ResourceAttributes == nil || review.Spec.ResourceAttributes.Namespace != namespace {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.resourceAttributes.namespace must match namespace: %v", namespace))
	}
	review.Status = rv.accessReviewStatus(ctx, attributesFor(reviewedUser(&review.Spec), review.Spec.ResourceAttributes, nil))
	review.SetGroupVersionKind(authorizationv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview"))
	return review, nil
}

func validateSubjectAccessReview(kind string, spec *authorizationv1.SubjectAccessReviewSpec) error {
	if (spec.ResourceAttributes == nil) == (spec.NonResourceAttributes == nil) {
		return invalidReview(kind, oneOfAttributes)
	}
	if spec.User == "" && len(spec.Groups) == 0 {
		return invalidReview(kind, field.Invalid(field.NewPath("spec", "user"), spec.User, "at least one of user or group must be specified"))
	}
	return nil
}

// oneOfAttributes is kube's refusal of a review asking about both or neither kind of attributes.
var oneOfAttributes = field.Required(field.NewPath("spec", "resourceAttributes"), "exactly one of nonResourceAttributes or resourceAttributes must be specified")

func invalidReview(kind string, err *field.Error) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: authorizationv1.GroupName, Kind: kind}, "", field.ErrorList{err})
}

// reviewedUser is the user a SubjectAccessReview asks about.
func reviewedUser(spec *authorizationv1.SubjectAccessReviewSpec) user.Info {
	extra := map[string][]string{}
	for k, v := range spec.Extra {
		extra[k] = v
	}
	return &user.DefaultInfo{Name: spec.User, UID: spec.UID, Groups: spec.Groups, Extra: extra}
}

// attributesFor are the authorizer's attributes of a review's question.
func attributesFor(u user.Info, res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes) authorizer.AttributesRecord {
	if nonRes != nil {
		return authorizer.AttributesRecord{User: u, Verb: nonRes.Verb, Path: nonRes.Path}
	}
	return authorizer.AttributesRecord{User: u, Verb: res.Verb, Namespace: res.Namespace, APIGroup: res.Group,
		APIVersion: res.Version, Resource: res.Resource, Subresource: res.Subresource, Name: res.Name, ResourceRequest: true}
}

func (rv *Reviewer) accessReviewStatus(ctx context.Context, attrs authorizer.AttributesRecord) authorizationv1.SubjectAccessReviewStatus {
	decision, reason, err := rv.authorizer.Authorize(ctx, attrs)
	status := authorizationv1.SubjectAccessReviewStatus{
		Allowed: decision == authorizer.DecisionAllow,
		Denied:  decision == authorizer.DecisionDeny,
		Reason:  reason,
	}
	if err != nil {
		status.EvaluationError = err.Error()
	}
	return status
}

// SelfSubjectRulesReview lists what the requester may do in the review's namespace, which it
// must name. As kube's, the answer is a new review: its spec is empty.
func (rv *Reviewer) SelfSubjectRulesReview(ctx context.Context, asked *authorizationv1.SelfSubjectRulesReview) (*authorizationv1.SelfSubjectRulesReview, error) {
	if asked.Spec.Namespace == "" {
		return nil, apierrors.NewBadRequest("no namespace on request")
	}
	resourceRules, nonResourceRules, incomplete, err := rv.rules.RulesFor(ctx, requester(ctx), asked.Spec.Namespace)
	review := &authorizationv1.SelfSubjectRulesReview{Status: authorizationv1.SubjectRulesReviewStatus{Incomplete: incomplete,
		ResourceRules: []authorizationv1.ResourceRule{}, NonResourceRules: []authorizationv1.NonResourceRule{}}}
	if err != nil {
		review.Status.EvaluationError = err.Error()
	}
	for _, rule := range resourceRules {
		review.Status.ResourceRules = append(review.Status.ResourceRules, authorizationv1.ResourceRule{Verbs: rule.GetVerbs(),
			APIGroups: rule.GetAPIGroups(), Resources: rule.GetResources(), ResourceNames: rule.GetResourceNames()})
	}
	for _, rule := range nonResourceRules {
		review.Status.NonResourceRules = append(review.Status.NonResourceRules, authorizationv1.NonResourceRule{Verbs: rule.GetVerbs(),
			NonResourceURLs: rule.GetNonResourceURLs()})
	}
	review.SetGroupVersionKind(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview"))
	return review, nil
}

// TokenReview authenticates spec.token as the server would a request bearing it and nothing
// else, for the audiences asked (the API's by default), as kube's TokenReview does.
func (rv *Reviewer) TokenReview(ctx context.Context, review *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
	if review.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	review.SetGroupVersionKind(authenticationv1.SchemeGroupVersion.WithKind("TokenReview"))
	if rv.tokens == nil {
		return review, nil
	}
	if len(review.Spec.Audiences) > 0 {
		ctx = authenticator.WithAudiences(ctx, review.Spec.Audiences)
	}
	bearing := (&http.Request{Header: http.Header{}}).WithContext(ctx)
	bearing.Header.Set("Authorization", "Bearer "+review.Spec.Token)
	resp, ok, err := rv.tokens.AuthenticateRequest(bearing)
	review.Status.Authenticated = ok
	if err != nil {
		review.Status.Error = err.Error()
	}
	if ok && resp != nil {
		review.Status.User = userInfo(resp.User)
		review.Status.Audiences = resp.Audiences
	}
	return review, nil
}

func userInfo(u user.Info) authenticationv1.UserInfo {
	info := authenticationv1.UserInfo{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups()}
	if extra := u.GetExtra(); len(extra) > 0 {
		info.Extra = map[string]authenticationv1.ExtraValue{}
		for k, v := range extra {
			info.Extra[k] = v
		}
	}
	return info
}

// SelfSubjectReview tells the requester who the server takes them for.
func (rv *Reviewer) SelfSubjectReview(ctx context.Context, review *authenticationv1.SelfSubjectReview) (*authenticationv1.SelfSubjectReview, error) {
	review.Status.UserInfo = userInfo(requester(ctx))
	review.ObjectMeta = metav1.ObjectMeta{CreationTimestamp: metav1.Now()}
	review.SetGroupVersionKind(authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview"))
	return review, nil
}
