package server

import (
	"net/http"

	"github.com/sqlkube/sqlkube/server/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
)

// decodeDeleteOptions reads DeleteOptions from the query and, when there is one, the body.
func (s *Server) decodeDeleteOptions(r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	if err := decodeQuery(r, opts); err != nil {
		return nil, err
	}
	body, isYAML, err := s.readRequestBody(r, true)
	if err != nil {
		return nil, err
	}
	if len(body) == 0 {
		return opts, optionsInvalid("DeleteOptions", metav1validation.ValidateDeleteOptions(opts))
	}
	obj, err := registry.ParseObject(body, isYAML, "DeleteOptions")
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, opts); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	auditRequestObject(r.Context(), obj)
	return opts, optionsInvalid("DeleteOptions", metav1validation.ValidateDeleteOptions(opts))
}
