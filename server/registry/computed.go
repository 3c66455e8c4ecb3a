package registry

import (
	"context"
	"encoding/json"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sqlkube/sqlkube/sqlstore"
)

// getComputed reads the object of a computed type (resource.Resource.Computed) ref names, or
// kube's NotFound, which names the type by its singular name (componentstatuses' storage does).
func getComputed(ctx context.Context, ref Ref) (sqlstore.Object, error) {
	for _, obj := range ref.Resource.Computed(ctx) {
		if obj.GetName() == ref.Name {
			value, err := json.Marshal(obj)
			return sqlstore.Object{Value: value}, err
		}
	}
	return sqlstore.Object{}, apierrors.NewNotFound(schema.GroupResource{Group: ref.Resource.Group, Resource: ref.Resource.SingularName}, ref.Name)
}

// listComputed streams the objects of a computed type that the options' selectors select, by
// their metadata alone as kube's componentstatuses storage does, in a list without a
// resourceVersion.
func listComputed(ctx context.Context, ref Ref, opts *internalversion.ListOptions, each func(sqlstore.Object) error) (metav1.ListMeta, error) {
	labelSelector, fieldSelector := labels.Everything(), fields.Everything()
	if opts.LabelSelector != nil {
		labelSelector = opts.LabelSelector
	}
	if opts.FieldSelector != nil {
		fieldSelector = opts.FieldSelector
	}
	for _, obj := range ref.Resource.Computed(ctx) {
		metaFields := fields.Set{"metadata.name": obj.GetName(), "metadata.namespace": obj.GetNamespace()}
		if !labelSelector.Matches(labels.Set(obj.GetLabels())) || !fieldSelector.Matches(metaFields) {
			continue
		}
		value, err := json.Marshal(obj)
		if err != nil {
			return metav1.ListMeta{}, err
		}
		if err := each(sqlstore.Object{Value: value}); err != nil {
			return metav1.ListMeta{}, err
		}
	}
	return metav1.ListMeta{}, nil
}
