package endpoints

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// parseCreateOptions reads and validates a create's query.
func parseCreateOptions(r *http.Request) (*metav1.CreateOptions, error) {
	opts := &metav1.CreateOptions{}
	if err := decodeQuery(r, opts); err != nil {
		return nil, err
	}
	return opts, optionsInvalid("CreateOptions", metav1validation.ValidateCreateOptions(opts))
}

// parseUpdateOptions reads and validates an update's query.
func parseUpdateOptions(r *http.Request) (*metav1.UpdateOptions, error) {
	opts := &metav1.UpdateOptions{}
	if err := decodeQuery(r, opts); err != nil {
		return nil, err
	}
	return opts, optionsInvalid("UpdateOptions", metav1validation.ValidateUpdateOptions(opts))
}

// getOptions reads a get's resourceVersion, which the registry checks.
func getOptions(r *http.Request) *metav1.GetOptions {
	return &metav1.GetOptions{ResourceVersion: r.URL.Query().Get("resourceVersion")}
}

// decodeQuery reads query parameters into options as kube-apiserver does, with apimachinery's
// parameter codec: a boolean is false only when absent, "0" or "false" in any case; of repeated
// values the first counts, except for list fields (dryRun); unknown parameters are ignored. A
// value of the wrong type is 400.
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

// watchListEnabled mirrors kube-apiserver's WatchList feature gate, on by default.
const watchListEnabled = true

// parseListOptions reads and validates the query of a list or watch, as kube-apiserver does:
// unparsable values (selectors, limit) are 400, invalid combinations 422 on ListOptions.
func parseListOptions(r *http.Request) (*internalversion.ListOptions, error) {
	opts := &internalversion.ListOptions{}
	if err := decodeQuery(r, opts); err != nil {
		return nil, err
	}
	internalversion.SetListOptionsDefaults(opts, watchListEnabled)
	if errs := validation.ValidateListOptions(opts, watchListEnabled); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	return opts, nil
}
