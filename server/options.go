package server

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// parseCreateOptions reads a create's query: the fieldValidation that applies to the body, and
// whether it is a dry run.
func parseCreateOptions(r *http.Request) (fieldValidation string, dryRun bool, err error) {
	opts := &metav1.CreateOptions{}
	if err := decodeQuery(r, opts); err != nil {
		return "", false, err
	}
	return opts.FieldValidation, len(opts.DryRun) > 0, optionsInvalid("CreateOptions", metav1validation.ValidateCreateOptions(opts))
}

// parseUpdateOptions reads an update's query, as parseCreateOptions does a create's.
func parseUpdateOptions(r *http.Request) (fieldValidation string, dryRun bool, err error) {
	opts := &metav1.UpdateOptions{}
	if err := decodeQuery(r, opts); err != nil {
		return "", false, err
	}
	return opts.FieldValidation, len(opts.DryRun) > 0, optionsInvalid("UpdateOptions", metav1validation.ValidateUpdateOptions(opts))
}

// decodeQuery reads query parameters into options as kube-apiserver does; a value of the wrong
// type is 400.
func decodeQuery(r *http.Request, into runtime.Object) error {
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, into); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}

// optionsInvalid is kube-apiserver's 422 for invalid options of the given kind.
func optionsInvalid(kind string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
}
