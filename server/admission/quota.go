package admission

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeadmission "k8s.io/apiserver/pkg/admission"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/server/storage"
	"k8s.io/client-go/informers"
	quotainstall "k8s.io/kubernetes/pkg/quota/v1/install"

	"github.com/sqlkube/sqlkube/server/catalog"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// newQuotaConfiguration is kube-apiserver's quota configuration for its ResourceQuota plugin
// (pkg/controlplane/apiserver/admission builds it in kube): the evaluators of the served types
// (pods, services, claims...) and the resources quota ignores (events, reviews).
func newQuotaConfiguration(types *catalog.Catalog, informers informers.SharedInformerFactory) (quota.Configuration, error) {
	return quotainstall.NewQuotaConfigurationForAdmission(informers, servedResources{types: types})
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

// evaluates says whether kube's ResourceQuota plugin evaluates a: it refuses a write beyond a
// quota's status.hard, and adds what the write uses to the quotas' status.used (an UpdateStatus
// through the loopback client) before admitting it. A write in a namespace that holds no
// ResourceQuota is admitted without it: for it kube's plugin only queues the request to a
// worker that finds no quota, which would cost every create.
func (q *quotaNamespaces) evaluates(a kubeadmission.Attributes) bool {
	namespace := a.GetNamespace()
	if namespace == "" {
		return false
	}
	if a.GetResource().GroupResource() == corev1.Resource("resourcequotas") && a.GetOperation() == kubeadmission.Create && !a.IsDryRun() {
		q.creating(namespace)
	}
	return q.mayHold(namespace)
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
