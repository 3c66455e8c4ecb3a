package endpoints

import (
	"fmt"
	"net/http"

	"github.com/sqlkube/sqlkube/server/auditlog"
	"github.com/sqlkube/sqlkube/server/registry/decode"
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
	if !isYAML {
		if err := checkDeleteOptionsKind(body); err != nil {
			return nil, err
		}
	}
	obj, err := decode.ParseObject(body, isYAML, "DeleteOptions")
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, opts); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	auditlog.RequestObject(r.Context(), obj)
	return opts, optionsInvalid("DeleteOptions", metav1validation.ValidateDeleteOptions(opts))
}

// checkDeleteOptionsKind answers a JSON body that is not DeleteOptions (or not an object) with
// kube-apiserver's 400: its decoder's error as is.
func checkDeleteOptionsKind(body []byte) error {
	apiVersion, kind, err := decode.ReadTypeMeta(body)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if kind == "" || kind == "DeleteOptions" {
		return nil
	}
	if apiVersion == "" {
		apiVersion = "meta.k8s.io/v1"
	}
	return apierrors.NewBadRequest(fmt.Sprintf("no kind %q is registered for version %q in scheme %q", kind, apiVersion, "pkg/runtime/scheme.go:111"))
}
