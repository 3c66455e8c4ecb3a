// Package rbac runs what kube-apiserver and kube-controller-manager do for RBAC: it writes kube's
// bootstrap policy at start (bootstrap.go), keeps the RBAC authorizer's copy of Roles,
// ClusterRoles and their bindings current by following storage, and keeps aggregated
// ClusterRoles (admin, edit, view and any with an aggregationRule) holding the rules of the roles
// they select.
package rbac

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/controllers"
	"github.com/sqlkube/sqlkube/server/follow"
	"github.com/sqlkube/sqlkube/server/rbac"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// Controller feeds an RBAC authorizer and aggregates ClusterRoles.
type Controller struct {
	deps       controllers.Deps
	authorizer *rbac.Authorizer
	types      map[string]*resource.Resource // the four RBAC types, by resource name
	namespaces *resource.Resource            // where the bootstrap policy's Roles are
	// synced counts the RBAC types listed at least once; the authorizer is complete at four.
	synced atomic.Int32
	// bootstrapped is set once the bootstrap policy is written (or was not asked for).
	bootstrapped atomic.Bool

	mu sync.Mutex
	// clusterRoles are what aggregation needs of every ClusterRole: labels, rules, selectors.
	clusterRoles map[string]rbacv1.ClusterRole
	aggregate    chan struct{} // a ClusterRole changed: recompute aggregated roles
}

// New makes the controller for authorizer. It finds the RBAC types in the catalog.
func New(deps controllers.Deps, authorizer *rbac.Authorizer) (*Controller, error) {
	c := &Controller{deps: deps, authorizer: authorizer, types: map[string]*resource.Resource{},
		clusterRoles: map[string]rbacv1.ClusterRole{}, aggregate: make(chan struct{}, 1)}
	for _, name := range []string{"roles", "clusterroles", "rolebindings", "clusterrolebindings"} {
		r, ok := deps.Catalog.Lookup(builtin.RBACGroup, "v1", name)
		if !ok {
			return nil, errors.New("the catalog serves no " + name)
		}
		c.types[name] = r
	}
	namespaces, ok := deps.Catalog.Lookup("", "v1", "namespaces")
	if !ok {
		return nil, errors.New("the catalog serves no namespaces")
	}
	c.namespaces = namespaces
	return c, nil
}

// Synced reports whether the authorizer has seen every RBAC object stored: until then, it may
// refuse what a binding it has not read yet allows.
func (c *Controller) Synced() bool { return c.synced.Load() == int32(len(c.types)) }

// Bootstrapped reports whether Run has written the bootstrap policy, or was asked to write none.
func (c *Controller) Bootstrapped() bool { return c.bootstrapped.Load() }

// RunOptions say what Run does beyond feeding the authorizer.
type RunOptions struct {
	// Bootstrap writes the bootstrap policy first (bootstrap.go), as kube-apiserver does.
	Bootstrap bool
	// Aggregate keeps aggregated ClusterRoles' rules, as kube-controller-manager's
	// clusterrole-aggregation-controller does.
	Aggregate bool
}

// Run does what opts say, then follows the RBAC types until ctx ends.
func (c *Controller) Run(ctx context.Context, opts RunOptions) {
	if opts.Bootstrap && !c.bootstrap(ctx) {
		return
	}
	if !opts.Aggregate {
		c.aggregate = nil // requestAggregation's send never proceeds, and Run never receives
	}
	c.bootstrapped.Store(true)
	for name, r := range c.types {
		go follow.Resource(ctx, c.deps.Store, c.deps.Log, r.StorageName, &observer{c: c, kind: name})
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.aggregate:
			c.aggregateAll(ctx)
		}
	}
}

// observer passes one RBAC type's objects to the authorizer (and ClusterRoles to aggregation).
type observer struct {
	c    *Controller
	kind string
	seen bool
}

func (o *observer) Relisting() {
	switch o.kind {
	case "roles", "clusterroles":
		o.c.authorizer.ResetRoles(o.kind == "clusterroles")
	default:
		o.c.authorizer.ResetBindings(o.kind == "clusterrolebindings")
	}
	if o.kind == "clusterroles" {
		o.c.mu.Lock()
		o.c.clusterRoles = map[string]rbacv1.ClusterRole{}
		o.c.mu.Unlock()
	}
}

func (o *observer) Listed(obj sqlstore.Object) { o.set(obj) }

func (o *observer) ListDone(int64) {
	if !o.seen {
		o.seen = true
		o.c.synced.Add(1)
	}
	o.c.requestAggregation(o.kind)
}

func (o *observer) Changed(ev *sqlstore.Event) {
	if ev.Op == sqlstore.OpDelete {
		o.delete(ev.Object.Namespace, ev.Object.Name)
	} else {
		o.set(ev.Object)
	}
	o.c.requestAggregation(o.kind)
}

func (o *observer) set(obj sqlstore.Object) {
	a := o.c.authorizer
	switch o.kind {
	case "roles":
		var r rbacv1.Role
		if o.decode(obj, &r) {
			a.SetRole(r.Namespace, r.Name, r.Rules)
		}
	case "clusterroles":
		var r rbacv1.ClusterRole
		if o.decode(obj, &r) {
			a.SetClusterRole(r.Name, r.Rules)
			o.c.mu.Lock()
			o.c.clusterRoles[r.Name] = rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: r.Name, Labels: r.Labels},
				Rules: r.Rules, AggregationRule: r.AggregationRule}
			o.c.mu.Unlock()
		}
	case "rolebindings":
		var b rbacv1.RoleBinding
		if o.decode(obj, &b) {
			a.SetBinding(b.Namespace, b.Name, b.RoleRef, b.Subjects)
		}
	case "clusterrolebindings":
		var b rbacv1.ClusterRoleBinding
		if o.decode(obj, &b) {
			a.SetBinding("", b.Name, b.RoleRef, b.Subjects)
		}
	}
}

func (o *observer) delete(namespace, name string) {
	switch o.kind {
	case "roles", "clusterroles":
		o.c.authorizer.DeleteRole(namespace, name)
	default:
		o.c.authorizer.DeleteBinding(namespace, name)
	}
	if o.kind == "clusterroles" {
		o.c.mu.Lock()
		delete(o.c.clusterRoles, name)
		o.c.mu.Unlock()
	}
}

func (o *observer) decode(obj sqlstore.Object, into any) bool {
	if err := storedobj.UnmarshalStored(obj.Value, into); err != nil {
		o.c.deps.Log.Error("rbac: decoding a stored object", "kind", o.kind, "name", obj.Name, "err", err)
		return false
	}
	return true
}
