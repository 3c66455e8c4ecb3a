package server

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gorilla/mux"
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

	"github.com/sqlkube/sqlkube/server/auditlog"
)

// Review APIs: create-only resources that answer a question about the requester or another user
// and store nothing, as kube-apiserver serves them.
const (
	authorizationPrefix  = "/apis/" + authorizationv1.GroupName + "/v1/"
	authenticationPrefix = "/apis/" + authenticationv1.GroupName + "/v1/"
)

// routeReviews adds the review endpoints ahead of the generic API routes.
func (s *Server) routeReviews(m *mux.Router) {
	m.Path(authorizationPrefix + "selfsubjectaccessreviews").HandlerFunc(s.review("selfsubjectaccessreviews", s.selfSubjectAccessReview))
	m.Path(authorizationPrefix + "subjectaccessreviews").HandlerFunc(s.review("subjectaccessreviews", s.subjectAccessReview))
	m.Path(authorizationPrefix + "namespaces/{namespace}/localsubjectaccessreviews").HandlerFunc(s.review("localsubjectaccessreviews", s.localSubjectAccessReview))
	m.Path(authorizationPrefix + "selfsubjectrulesreviews").HandlerFunc(s.review("selfsubjectrulesreviews", s.selfSubjectRulesReview))
	m.Path(authenticationPrefix + "selfsubjectreviews").HandlerFunc(s.review("selfsubjectreviews", s.selfSubjectReview))
	m.Path(authenticationPrefix + "tokenreviews").HandlerFunc(s.review("tokenreviews", s.tokenReview))
}

// reviewFunc answers one review: it decodes the body and returns the review with its status.
type reviewFunc func(r *http.Request, body []byte) (any, error)

// review serves POST of a review resource: 201 with the answered review; other methods are 405.
func (s *Server) review(resource string, answer reviewFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			s.writeError(w, r, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: resource}, requestVerbOf(r)))
			return
		}
		body, _, err := s.readRequestBody(r, true)
		if err == nil {
			auditlog.RequestBody(r.Context(), body)
			var out any
			if out, err = answer(r, body); err == nil {
				writeJSON(w, r, output{yaml: prefersYAML(r)}, http.StatusCreated, out)
				return
			}
		}
		s.writeError(w, r, err)
	}
}

func requestVerbOf(r *http.Request) string {
	if info, ok := genericrequest.RequestInfoFrom(r.Context()); ok {
		return info.Verb
	}
	return r.Method
}

func decodeReview(body []byte, into any) error {
	if err := json.Unmarshal(body, into); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("unable to decode the review: %v", err))
	}
	return nil
}

func requester(r *http.Request) user.Info {
	if u, ok := genericrequest.UserFrom(r.Context()); ok {
		return u
	}
	return &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
}

func (s *Server) selfSubjectAccessReview(r *http.Request, body []byte) (any, error) {
	review := &authorizationv1.SelfSubjectAccessReview{}
	if err := decodeReview(body, review); err != nil {
		return nil, err
	}
	if (review.Spec.ResourceAttributes == nil) == (review.Spec.NonResourceAttributes == nil) {
		return nil, invalidReview("SelfSubjectAccessReview", oneOfAttributes)
	}
	review.Status = s.accessReviewStatus(r, attributesFor(requester(r), review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes))
	review.SetGroupVersionKind(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"))
	return review, nil
}

func (s *Server) subjectAccessReview(r *http.Request, body []byte) (any, error) {
	review := &authorizationv1.SubjectAccessReview{}
	if err := decodeReview(body, review); err != nil {
		return nil, err
	}
	if err := validateSubjectAccessReview("SubjectAccessReview", &review.Spec); err != nil {
		return nil, err
	}
	review.Status = s.accessReviewStatus(r, attributesFor(reviewedUser(&review.Spec), review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes))
	review.SetGroupVersionKind(authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview"))
	return review, nil
}

func (s *Server) localSubjectAccessReview(r *http.Request, body []byte) (any, error) {
	review := &authorizationv1.LocalSubjectAccessReview{}
	if err := decodeReview(body, review); err != nil {
		return nil, err
	}
	if err := validateSubjectAccessReview("LocalSubjectAccessReview", &review.Spec); err != nil {
		return nil, err
	}
	namespace := mux.Vars(r)["namespace"]
	if review.Spec.ResourceAttributes == nil || review.Spec.ResourceAttributes.Namespace != namespace {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.resourceAttributes.namespace must match namespace: %v", namespace))
	}
	review.Status = s.accessReviewStatus(r, attributesFor(reviewedUser(&review.Spec), review.Spec.ResourceAttributes, nil))
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

func (s *Server) accessReviewStatus(r *http.Request, attrs authorizer.AttributesRecord) authorizationv1.SubjectAccessReviewStatus {
	decision, reason, err := s.authorizer.Authorize(r.Context(), attrs)
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

func (s *Server) selfSubjectRulesReview(r *http.Request, body []byte) (any, error) {
	review := &authorizationv1.SelfSubjectRulesReview{}
	if err := decodeReview(body, review); err != nil {
		return nil, err
	}
	resourceRules, nonResourceRules, incomplete, err := s.ruleResolver.RulesFor(r.Context(), requester(r), review.Spec.Namespace)
	review.Status = authorizationv1.SubjectRulesReviewStatus{Incomplete: incomplete,
		ResourceRules: []authorizationv1.ResourceRule{}, NonResourceRules: []authorizationv1.NonResourceRule{}}
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

// tokenReview authenticates spec.token with the server's bearer-token authenticators, for the
// audiences asked (the API's by default), as kube's TokenReview does.
func (s *Server) tokenReview(r *http.Request, body []byte) (any, error) {
	review := &authenticationv1.TokenReview{}
	if err := decodeReview(body, review); err != nil {
		return nil, err
	}
	if review.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	review.SetGroupVersionKind(authenticationv1.SchemeGroupVersion.WithKind("TokenReview"))
	if s.tokenReviewer == nil {
		return review, nil
	}
	ctx := r.Context()
	if len(review.Spec.Audiences) > 0 {
		ctx = authenticator.WithAudiences(ctx, review.Spec.Audiences)
	}
	resp, ok, err := s.tokenReviewer.AuthenticateToken(ctx, review.Spec.Token)
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

func (s *Server) selfSubjectReview(r *http.Request, body []byte) (any, error) {
	review := &authenticationv1.SelfSubjectReview{}
	if err := decodeReview(body, review); err != nil {
		return nil, err
	}
	review.Status.UserInfo = userInfo(requester(r))
	review.ObjectMeta = metav1.ObjectMeta{CreationTimestamp: metav1.Now()}
	review.SetGroupVersionKind(authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview"))
	return review, nil
}
