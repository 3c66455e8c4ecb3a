package builtin

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/sqlkube/sqlkube/server/resource"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// Access is what kube's strategies of some types ask of the server around them, as
// kube-apiserver hands its REST storage its loopback client and its authorizer: a ResourceClaim
// asking for admin access is checked against its namespace's labels, and the status writes of
// ResourceClaims and PodCertificateRequests are authorized per field. The types are described
// before the server has either (the catalog comes first), so the server binds them later
// (Bind); until then a namespace is not found and nothing is authorized. componentstatuses are
// computed from the server's liveness checks (BindLiveChecks).
type Access struct {
	bound  atomic.Pointer[access]
	checks atomic.Pointer[func(context.Context) []resource.Check]
	// serviceAllocations are the services type's Allocations (BindServiceAllocations).
	serviceAllocations boundAllocations
}

type access struct {
	namespaces corev1client.NamespaceInterface
	authz      authorizer.Authorizer
}

// BindLiveChecks gives componentstatuses the server's liveness checks, which it runs at each
// read; until then there are none.
func (a *Access) BindLiveChecks(checks func(context.Context) []resource.Check) {
	a.checks.Store(&checks)
}

// liveChecks runs the server's liveness checks.
func (a *Access) liveChecks(ctx context.Context) []resource.Check {
	if checks := a.checks.Load(); checks != nil {
		return (*checks)(ctx)
	}
	return nil
}

// Bind gives the strategies the server's namespace client and authorizer.
func (a *Access) Bind(namespaces corev1client.NamespaceInterface, authz authorizer.Authorizer) {
	a.bound.Store(&access{namespaces: namespaces, authz: authz})
}

var errUnbound = errors.New("the server has not bound its namespace client and authorizer yet")

// Authorize asks the server's authorizer.
func (a *Access) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	bound := a.bound.Load()
	if bound == nil {
		return authorizer.DecisionNoOpinion, "", errUnbound
	}
	return bound.authz.Authorize(ctx, attrs)
}

// namespaces is the namespace client kube's ResourceClaim strategies read a namespace with. They
// only Get (k8s.io/kubernetes/pkg/registry/resource's admin access checks): the other methods
// of the interface are left unimplemented.
func (a *Access) namespaces() corev1client.NamespaceInterface { return accessNamespaces{a: a} }

type accessNamespaces struct {
	corev1client.NamespaceInterface
	a *Access
}

func (n accessNamespaces) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Namespace, error) {
	bound := n.a.bound.Load()
	if bound == nil {
		return nil, errUnbound
	}
	return bound.namespaces.Get(ctx, name, opts)
}
