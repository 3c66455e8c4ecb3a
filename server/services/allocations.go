package services

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/registry/core/service/ipallocator"
	"k8s.io/kubernetes/pkg/registry/core/service/portallocator"
	servicestore "k8s.io/kubernetes/pkg/registry/core/service/storage"

	"github.com/sqlkube/sqlkube/server/resource"
)

// allocations are the services' resource.Allocations: kube-apiserver's own service storage
// hooks (pkg/registry/core/service/storage: BeginCreate, BeginUpdate, AfterDelete), which
// default the IP families, allocate cluster IPs and node ports and release them, run on the
// Service as kube's internal type.
type allocations struct {
	hooks    *genericregistry.Store // kube's service storage; only its hooks are used
	internal resource.InternalObjects
}

// newAllocations builds kube's service storage on the allocators, for its hooks only: it is
// given a storage decorator that makes no storage.
func newAllocations(services *resource.Resource, family api.IPFamily, ips map[api.IPFamily]ipallocator.Interface, ports portallocator.Interface) (*allocations, error) {
	internal, ok := services.Strategy.(resource.InternalObjects)
	if !ok {
		return nil, fmt.Errorf("the services' strategy %T does not convert to kube's internal Service", services.Strategy)
	}
	noStorage := generic.RESTOptions{
		StorageConfig:  &storagebackend.ConfigForResource{},
		ResourcePrefix: "services",
		Decorator: func(*storagebackend.ConfigForResource, string, func(runtime.Object) (string, error), func() runtime.Object, func() runtime.Object, storage.AttrFunc, storage.IndexerFuncs, *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
			return nil, func() {}, nil
		},
	}
	rest, _, _, err := servicestore.NewREST(noStorage, family, ips, ports, nil, nil, nil)
	if err != nil {
		return nil, err
	}
	return &allocations{hooks: rest.Store, internal: internal}, nil
}

var _ resource.Allocations = (*allocations)(nil)

func (a *allocations) BeginCreate(ctx context.Context, obj *unstructured.Unstructured, dryRun bool) (resource.Finish, error) {
	return a.begin(ctx, obj, func(svc runtime.Object) (genericregistry.FinishFunc, error) {
		return a.hooks.BeginCreate(ctx, svc, &metav1.CreateOptions{DryRun: dryRunOption(dryRun)})
	})
}

func (a *allocations) BeginUpdate(ctx context.Context, obj, old *unstructured.Unstructured, dryRun bool) (resource.Finish, error) {
	var oldSvc runtime.Object
	if err := resource.Internally(a.internal, old.DeepCopy(), func(internal runtime.Object) error {
		oldSvc = internal
		return nil
	}); err != nil {
		return nil, err
	}
	return a.begin(ctx, obj, func(svc runtime.Object) (genericregistry.FinishFunc, error) {
		return a.hooks.BeginUpdate(ctx, svc, oldSvc, &metav1.UpdateOptions{DryRun: dryRunOption(dryRun)})
	})
}

// begin runs hook on obj as an internal Service, writing what it allocated into obj, and
// returns its finish.
func (a *allocations) begin(ctx context.Context, obj *unstructured.Unstructured, hook func(svc runtime.Object) (genericregistry.FinishFunc, error)) (resource.Finish, error) {
	var finish genericregistry.FinishFunc
	err := resource.Internally(a.internal, obj, func(svc runtime.Object) error {
		var err error
		finish, err = hook(svc)
		return err
	})
	if err != nil {
		if finish != nil {
			finish(ctx, false)
		}
		return nil, err
	}
	return func(success bool) { finish(ctx, success) }, nil
}

func (a *allocations) AfterDelete(_ context.Context, obj *unstructured.Unstructured, dryRun bool) {
	_ = resource.Internally(a.internal, obj.DeepCopy(), func(svc runtime.Object) error {
		a.hooks.AfterDelete(svc, &metav1.DeleteOptions{DryRun: dryRunOption(dryRun)})
		return nil
	})
}

func dryRunOption(dryRun bool) []string {
	if dryRun {
		return []string{metav1.DryRunAll}
	}
	return nil
}
