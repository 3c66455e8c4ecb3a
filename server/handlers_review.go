package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gorilla/mux"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/sqlkube/sqlkube/server/auditlog"
)

// Review APIs: create-only resources that answer a question about the requester or another user
// and store nothing, as kube-apiserver serves them.
const (
	authorizationPrefix  = "/apis/" + authorizationv1.GroupName + "/v1/"
	authenticationPrefix = "/apis/" + authenticationv1.GroupName + "/v1/"
)

// routeReviews adds the review endpoints ahead of the generic API routes; the reviews package
// answers them.
func (s *Server) routeReviews(m *mux.Router) {
	rv := s.api.Reviews
	m.Path(authorizationPrefix + "selfsubjectaccessreviews").HandlerFunc(s.review("selfsubjectaccessreviews", decoded(rv.SelfSubjectAccessReview)))
	m.Path(authorizationPrefix + "subjectaccessreviews").HandlerFunc(s.review("subjectaccessreviews", decoded(rv.SubjectAccessReview)))
	m.Path(authorizationPrefix + "namespaces/{namespace}/localsubjectaccessreviews").HandlerFunc(s.review("localsubjectaccessreviews", s.localSubjectAccessReview))
	m.Path(authorizationPrefix + "selfsubjectrulesreviews").HandlerFunc(s.review("selfsubjectrulesreviews", decoded(rv.SelfSubjectRulesReview)))
	m.Path(authenticationPrefix + "selfsubjectreviews").HandlerFunc(s.review("selfsubjectreviews", decoded(rv.SelfSubjectReview)))
	m.Path(authenticationPrefix + "tokenreviews").HandlerFunc(s.review("tokenreviews", decoded(rv.TokenReview)))
}

// reviewFunc answers one review: it decodes the body and returns the review with its status.
type reviewFunc func(r *http.Request, body []byte) (any, error)

// review serves POST of a review resource: 201 with the answered review, with the managedFields
// kube-apiserver records for it; other methods are 405.
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
				if answered, ok := out.(metav1.Object); ok {
					answered.SetManagedFields(createdFields(r, reviewTypes[resource], body))
				}
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

// decoded is a reviewFunc decoding the body into a new T for answer, which is given the
// request's context: the requester is its user.
func decoded[T any](answer func(ctx context.Context, in *T) (*T, error)) reviewFunc {
	return func(r *http.Request, body []byte) (any, error) {
		in := new(T)
		if err := decodeReview(body, in); err != nil {
			return nil, err
		}
		return answer(r.Context(), in)
	}
}

// localSubjectAccessReview answers a LocalSubjectAccessReview posted in the route's namespace.
func (s *Server) localSubjectAccessReview(r *http.Request, body []byte) (any, error) {
	review := &authorizationv1.LocalSubjectAccessReview{}
	if err := decodeReview(body, review); err != nil {
		return nil, err
	}
	return s.api.Reviews.LocalSubjectAccessReview(r.Context(), mux.Vars(r)["namespace"], review)
}
