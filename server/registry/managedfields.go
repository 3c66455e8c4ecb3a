package registry

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/registry/fieldmanagers"
)

// recordManagedFields records in obj's managedFields what a create (old nil) or an update of
// old to obj changes, owned by req.manager (see fieldmanagers.Record). A write without a
// manager (an apply) has them already.
func recordManagedFields(ctx context.Context, req *request, mode updateMode, obj, old *unstructured.Unstructured) *unstructured.Unstructured {
	if req.manager == "" {
		return obj
	}
	return fieldmanagers.Record(ctx, req.res, subresourceOf(mode), req.manager, obj, old)
}

func subresourceOf(mode updateMode) string { return string(mode) }
