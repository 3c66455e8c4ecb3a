package registry

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// initialNamespaces exist on every cluster; kube-apiserver creates them at start-up.
var initialNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// immortalNamespaces may not be deleted.
var immortalNamespaces = map[string]bool{"default": true, "kube-system": true, "kube-public": true}

var namespacesGR = schema.GroupResource{Resource: "namespaces"}

// isNamespaces is true for the namespaces type, whose writes the namespace cache waits for.
func (r *Registry) isNamespaces(res *resource.Resource) bool {
	return res.StorageName == r.namespaceResource.StorageName
}

// namespaceRequest is a request on the namespace called name.
func (r *Registry) namespaceRequest(name string) *request {
	return &request{res: r.namespaceResource, gr: namespacesGR, name: name}
}

// ensureInitialNamespaces creates the initial namespaces that are missing. Replicas starting
// together on one database may race: a namespace another one created is fine.
func (r *Registry) ensureInitialNamespaces(ctx context.Context) error {
	for _, name := range initialNamespaces {
		req := r.namespaceRequest(name)
		if _, err := r.store.Get(ctx, req.key()); err == nil {
			continue
		}
		ns := &unstructured.Unstructured{Object: map[string]interface{}{}}
		ns.SetName(name)
		if _, err := r.create(ctx, req, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	return nil
}

// CheckNamespaceAcceptsContent refuses to create objects in a namespace that does not exist
// (404) or is being deleted (403), as kube-apiserver's namespace lifecycle admission does: from
// the namespace cache when it can answer, from storage otherwise.
func (r *Registry) CheckNamespaceAcceptsContent(ctx context.Context, gr schema.GroupResource, name, namespace string) error {
	if r.opts.NoNamespaceLifecycle {
		return nil
	}
	terminating, cached := r.namespaces.lookup(namespace)
	if !cached {
		var err error
		if terminating, err = r.readNamespaceTerminating(ctx, namespace); err != nil {
			return err
		}
	}
	if terminating {
		return namespaceTerminatingError(gr, name, namespace)
	}
	return nil
}

// admissionChecksNamespaces says whether the admission of a create made in ctx runs
// CheckNamespaceAcceptsContent itself.
func (r *Registry) admissionChecksNamespaces(ctx context.Context) bool {
	return r.opts.Admission != nil && hasUser(ctx) && r.opts.Admission.ChecksNamespaces()
}

// namespaceTerminatingError is kube's NamespaceLifecycle admission's refusal of new content in a
// namespace being deleted: a 403 whose cause says why, for clients that look for it.
func namespaceTerminatingError(gr schema.GroupResource, name, namespace string) error {
	err := apierrors.NewForbidden(gr, name, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", namespace))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type:    corev1.NamespaceTerminatingCause,
		Message: fmt.Sprintf("namespace %s is being terminated", namespace),
		Field:   "metadata.namespace",
	})
	return err
}

// readNamespaceTerminating reads from storage whether namespace is being deleted (NotFound if
// it does not exist).
func (r *Registry) readNamespaceTerminating(ctx context.Context, namespace string) (bool, error) {
	req := r.namespaceRequest(namespace)
	stored, err := r.store.Get(ctx, req.key())
	if errors.Is(err, sqlstore.ErrNotFound) {
		return false, apierrors.NewNotFound(namespacesGR, namespace)
	}
	if err != nil {
		return false, storageError(err, namespacesGR, namespace)
	}
	return namespaceTerminating(stored.Value)
}

// namespaceTerminating says whether the stored namespace is being deleted: deletionTimestamp
// set or phase Terminating.
func namespaceTerminating(value []byte) (bool, error) {
	// Only the two fields the answer depends on: decoding the whole ObjectMeta (managedFields
	// included) cost a fifth of a storage read of the namespace.
	var ns struct {
		Metadata struct {
			DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
		} `json:"metadata"`
		Status struct {
			Phase string `json:"phase"`
		} `json:"status"`
	}
	if err := UnmarshalStored(value, &ns); err != nil {
		return false, err
	}
	return ns.Metadata.DeletionTimestamp != nil || ns.Status.Phase == "Terminating", nil
}

// checkNamespaceDeletable refuses to delete the namespaces every cluster needs, as
// kube-apiserver's namespace lifecycle admission does.
func (r *Registry) checkNamespaceDeletable(req *request) error {
	if r.isNamespaces(req.res) && immortalNamespaces[req.name] && !r.opts.NoNamespaceLifecycle {
		return apierrors.NewForbidden(req.gr, req.name, errors.New("this namespace may not be deleted"))
	}
	return nil
}

// checkNamespacePreconditions is checkPreconditions for a namespace, worded as kube's namespace
// storage, which checks them itself, words a mismatch.
func checkNamespacePreconditions(p *metav1.Preconditions, ns *unstructured.Unstructured) error {
	if p.UID != nil && *p.UID != ns.GetUID() {
		return apierrors.NewConflict(namespacesGR, ns.GetName(), fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, ns.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != ns.GetResourceVersion() {
		return apierrors.NewConflict(namespacesGR, ns.GetName(), fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, ns.GetResourceVersion()))
	}
	return nil
}
