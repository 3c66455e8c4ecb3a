package admission

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeadmission "k8s.io/apiserver/pkg/admission"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/server/storage"
	"k8s.io/client-go/informers"
	quotainstall "k8s.io/kubernetes/pkg/quota/v1/install"

	"github.com/sqlkube/sqlkube/server/catalog"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// quotaConfiguration gives kube's ResourceQuota plugin kube-apiserver's quota configuration
// (pkg/controlplane/apiserver/admission's initializer does it in kube): the evaluators of the
// served types (pods, services, claims...) and the resources quota ignores (events, reviews).
type quotaConfiguration struct{ config quota.Configuration }

func newQuotaConfiguration(types *catalog.Catalog, informers informers.SharedInformerFactory) (quotaConfiguration, error) {
	config, err := quotainstall.NewQuotaConfigurationForAdmission(informers, servedResources{types: types})
	return quotaConfiguration{config}, err
}

func (q quotaConfiguration) Initialize(plugin kubeadmission.Interface) {
	if wants, ok := plugin.(interface{ SetQuotaConfiguration(quota.Configuration) }); ok {
		wants.SetQuotaConfiguration(q.config)
	}
}

// servedResources is kube-apiserver's resource configuration as the quota evaluators ask it: a
// resource is enabled when sqlkube serves it (an evaluator of a type not served would follow
// objects that do not exist).
type servedResources struct {
	storage.APIResourceConfigSource
	types *catalog.Catalog
}

func (s servedResources) ResourceEnabled(gvr schema.GroupVersionResource) bool {
	_, ok := s.types.Lookup(gvr.Group, gvr.Version, gvr.Resource)
	return ok
}

// checkQuota runs kube's ResourceQuota plugin on req, last of the validations as in kube: it
// refuses a write beyond a quota's status.hard, and adds what the write uses to the quotas'
// status.used (an UpdateStatus through the loopback client) before admitting it. A write in a
// namespace that holds no ResourceQuota is admitted without it: for it kube's plugin only
// queues the request to a worker that finds no quota, which would cost every create.
func (p *kubePlugins) checkQuota(ctx context.Context, req *registry.AdmissionRequest, objects kubeadmission.ObjectInterfaces, namespaces *quotaNamespaces) error {
	if p == nil || req.Namespace == "" {
		return nil
	}
	if req.Resource.StorageName == resourceQuotasStorageName && req.Operation == kubeadmission.Create && !req.DryRun {
		namespaces.creating(req.Namespace)
	}
	if !namespaces.mayHold(req.Namespace) {
		return nil
	}
	attrs := internalAttributes(ctx, req)
	if !p.quota.Handles(attrs.GetOperation()) {
		return nil
	}
	return p.quota.Validate(ctx, attrs, objects)
}

// quotaNamespaces tells which namespaces may hold ResourceQuotas: it follows the stored quotas
// (list, then watch from the list's revision, as nscache follows namespaces), and a namespace
// a quota is being created in counts from its admission until the quota is seen, so that the
// write following a quota's creation is never let through unevaluated. It answers "may" for
// every namespace while it is not following storage.
type quotaNamespaces struct {
	mu     sync.RWMutex
	synced bool
	quotas map[string]int // namespace → how many quotas it holds
	// pending are the namespaces a quota is being created in, not yet seen. One whose create
	// failed stays: its writes are evaluated by kube's plugin, which finds no quota.
	pending map[string]bool

	// listing gathers a list in progress; only the follower's goroutine touches it.
	listing map[string]int
}

func newQuotaNamespaces() *quotaNamespaces {
	return &quotaNamespaces{quotas: map[string]int{}, pending: map[string]bool{}}
}

// mayHold says whether namespace may hold a ResourceQuota.
func (q *quotaNamespaces) mayHold(namespace string) bool {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return !q.synced || q.quotas[namespace] > 0 || q.pending[namespace]
}

// creating records that a quota is being created in namespace.
func (q *quotaNamespaces) creating(namespace string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending[namespace] = true
}

func (q *quotaNamespaces) Relisting() { q.listing = map[string]int{} }

func (q *quotaNamespaces) Listed(o sqlstore.Object) { q.listing[o.Namespace]++ }

func (q *quotaNamespaces) ListDone(int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.quotas, q.synced, q.listing = q.listing, true, nil
	for namespace := range q.quotas {
		delete(q.pending, namespace)
	}
}

func (q *quotaNamespaces) Changed(ev *sqlstore.Event) {
	namespace := ev.Object.Namespace
	q.mu.Lock()
	defer q.mu.Unlock()
	switch ev.Op {
	case sqlstore.OpCreate:
		q.quotas[namespace]++
		delete(q.pending, namespace)
	case sqlstore.OpDelete:
		if q.quotas[namespace]--; q.quotas[namespace] <= 0 {
			delete(q.quotas, namespace)
		}
	}
}

func (q *quotaNamespaces) WatchEnded() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.synced = false
}
