package endpoints

import (
	"context"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sqlkube/sqlkube/server/discovery"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// Types resolves a request's path to the resource it names. *catalog.Catalog implements it.
type Types interface {
	// Lookup finds the resource served at group/version/name (plural).
	Lookup(group, version, name string) (*resource.Resource, bool)
}

// Objects is what the HTTP layer asks of the object rules: every verb on a resolved request,
// with metav1's option structs, answering apimachinery Status errors. *registry.Registry
// implements it; see its methods for what each promises.
type Objects interface {
	Get(ctx context.Context, ref registry.Ref, opts *metav1.GetOptions) (sqlstore.Object, error)
	List(ctx context.Context, ref registry.Ref, opts *internalversion.ListOptions, each func(sqlstore.Object) error) (metav1.ListMeta, error)
	Watch(ctx context.Context, ref registry.Ref, opts *internalversion.ListOptions) (*registry.Watch, error)
	Create(ctx context.Context, ref registry.Ref, obj *unstructured.Unstructured, opts *metav1.CreateOptions) (sqlstore.Object, []string, error)
	Update(ctx context.Context, ref registry.Ref, obj *unstructured.Unstructured, opts *metav1.UpdateOptions) (stored sqlstore.Object, created bool, err error)
	Patch(ctx context.Context, ref registry.Ref, patchType types.PatchType, body []byte, opts *metav1.PatchOptions) (stored sqlstore.Object, created bool, warnings []string, err error)
	Delete(ctx context.Context, ref registry.Ref, opts *metav1.DeleteOptions) (stored sqlstore.Object, deleted bool, err error)
	DeleteCollection(ctx context.Context, ref registry.Ref, listOpts *internalversion.ListOptions, opts *metav1.DeleteOptions, each func(sqlstore.Object) error) (metav1.ListMeta, error)
	GetScale(ctx context.Context, ref registry.Ref, opts *metav1.GetOptions) (*autoscalingv1.Scale, error)
	UpdateScale(ctx context.Context, ref registry.Ref, scale *autoscalingv1.Scale, opts *metav1.UpdateOptions) (*autoscalingv1.Scale, error)
	PatchScale(ctx context.Context, ref registry.Ref, patchType types.PatchType, body []byte, opts *metav1.PatchOptions) (*autoscalingv1.Scale, []string, error)
}

// Documents holds the discovery and OpenAPI documents of what is served now.
// *discovery.Cache implements it.
type Documents interface {
	Docs() *discovery.Docs
}

var (
	_ Objects   = (*registry.Registry)(nil)
	_ Documents = (*discovery.Cache)(nil)
)
