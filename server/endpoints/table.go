package endpoints

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sqlkube/sqlkube/server/registry/views"
)

// newTable reads the includeObject option and starts the table of req's type.
func newTable(r *http.Request, req *request, metaVersion string) (*views.Table, error) {
	include, err := includeObjectPolicy(r)
	if err != nil {
		return nil, err
	}
	return views.NewTable(r.Context(), req.res, include, metaVersion)
}

// includeObjectPolicy reads includeObject: Metadata (the default), None or Object.
func includeObjectPolicy(r *http.Request) (metav1.IncludeObjectPolicy, error) {
	switch p := metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject")); p {
	case "", metav1.IncludeMetadata:
		return metav1.IncludeMetadata, nil
	case metav1.IncludeNone, metav1.IncludeObject:
		return p, nil
	default:
		return "", apierrors.NewBadRequest(fmt.Sprintf("unrecognized includeObject value: %q", p))
	}
}
