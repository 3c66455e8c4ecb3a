package endpoints

import (
	"net/http"
	"slices"

	genericrequest "k8s.io/apiserver/pkg/endpoints/request"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/httpstream"

	"github.com/sqlkube/sqlkube/server/auditlog"
	"github.com/sqlkube/sqlkube/server/resource"
)

// dispatchCreateOnly serves a create-only type (resource.CreateOnly): POST to its collection,
// answered by its Creater; other methods are 405, naming the resource, and it has no objects.
func (s *Server) dispatchCreateOnly(w http.ResponseWriter, r *http.Request, req *request) {
	switch {
	case req.name != "":
		s.writeError(w, r, errNotFoundPath())
	case r.Method != http.MethodPost:
		s.writeError(w, r, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: req.res.Name}, requestVerbOf(r)))
	default:
		// A review's answer comes in the first format Accept names, else JSON.
		s.handle(w, r, req, func(w http.ResponseWriter, r *http.Request, req *request) error {
			out, _ := statusOutput(r, true)
			return s.create(w, r, req, out, req.res.Creater)
		})
	}
}

// dispatchHandled serves a subresource answered by a handler of its type's own: a Creater takes
// POST, a Connecter the methods it names.
func (s *Server) dispatchHandled(w http.ResponseWriter, r *http.Request, req *request, sub *resource.Subresource) {
	switch {
	case sub.Creater != nil && r.Method == http.MethodPost:
		s.handle(w, r, req, func(w http.ResponseWriter, r *http.Request, req *request) error {
			out, err := negotiateOutput(r, req, false)
			if err != nil {
				return err
			}
			return s.create(w, r, req, out, sub.Creater)
		})
	case sub.Connecter != nil && slices.Contains(sub.Connecter.ConnectMethods(), r.Method):
		s.handle(w, r, req, func(w http.ResponseWriter, r *http.Request, req *request) error {
			h, err := sub.Connecter.Connect(r.Context(), req.namespace, req.name, resource.ConnectRequest{Query: r.URL.Query(), Upgrade: httpstream.IsUpgradeRequest(r)})
			if err == nil {
				h.ServeHTTP(w, r)
			}
			return err
		})
	default:
		s.methodNotSupported(w, r, req)
	}
}

// create reads a POST's body and options, has creater answer it, and encodes the answer: an
// object with 201 Created, a Status with its own code.
func (s *Server) create(w http.ResponseWriter, r *http.Request, req *request, out output, creater resource.Creater) error {
	opts, err := parseCreateOptions(r)
	if err != nil {
		return err
	}
	body, isYAML, err := s.readRequestBody(r, true)
	if err != nil {
		return err
	}
	auditlog.RequestBody(r.Context(), body)
	opts.FieldManager = req.manager
	answer, err := creater.Create(r.Context(), req.namespace, req.name, body, isYAML, opts)
	if err != nil {
		return err
	}
	return writeJSON(w, r, out, answerCode(answer), answer)
}

// answerCode is the status code of a Creater's answer: a Status's own, else 201 Created.
func answerCode(answer runtime.Object) int {
	if status, ok := answer.(*metav1.Status); ok && status.Code != 0 {
		return int(status.Code)
	}
	return http.StatusCreated
}

// requestVerbOf is the verb the filters' request info gives r, else its method.
func requestVerbOf(r *http.Request) string {
	if info, ok := genericrequest.RequestInfoFrom(r.Context()); ok {
		return info.Verb
	}
	return r.Method
}
