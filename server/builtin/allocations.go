package builtin

import (
	"context"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/resource"
)

// boundAllocations are the services' resource.Allocations as the type declares them when the
// catalog is built: kube's service storage hooks need the server's allocators, which follow
// ServiceCIDRs and IPAddresses through the loopback client, so the server binds them later
// (Access.BindServiceAllocations). Until then (a catalog without a server: the registry's and
// controllers' tests) Services are written without allocating anything, as a type without
// Allocations.
type boundAllocations struct {
	bound atomic.Pointer[resource.Allocations]
}

// load is the bound hooks, nil until bound.
func (b *boundAllocations) load() resource.Allocations {
	if a := b.bound.Load(); a != nil {
		return *a
	}
	return nil
}

func (b *boundAllocations) BeginCreate(ctx context.Context, obj *unstructured.Unstructured, dryRun bool) (resource.Finish, error) {
	if a := b.load(); a != nil {
		return a.BeginCreate(ctx, obj, dryRun)
	}
	return func(bool) {}, nil
}

func (b *boundAllocations) BeginUpdate(ctx context.Context, obj, old *unstructured.Unstructured, dryRun bool) (resource.Finish, error) {
	if a := b.load(); a != nil {
		return a.BeginUpdate(ctx, obj, old, dryRun)
	}
	return func(bool) {}, nil
}

func (b *boundAllocations) AfterDelete(ctx context.Context, obj *unstructured.Unstructured, dryRun bool) {
	if a := b.load(); a != nil {
		a.AfterDelete(ctx, obj, dryRun)
	}
}

// BindServiceAllocations gives the services type kube's service storage hooks on the server's
// allocators (package services).
func (a *Access) BindServiceAllocations(hooks resource.Allocations) {
	a.serviceAllocations.bound.Store(&hooks)
}
