package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sqlkube/sqlkube/server/registry/storedobj"
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

// apiServerManager is who kube-apiserver's own writes are recorded for in managedFields.
const apiServerManager = "kube-apiserver"

// ensureInitialNamespaces creates the initial namespaces that are missing, and restores the kind
// of those an earlier sqlkube stored without one.
func (r *Registry) ensureInitialNamespaces(ctx context.Context) error {
	for _, name := range initialNamespaces {
		if err := r.ensureInitialNamespace(ctx, name); err != nil {
			return fmt.Errorf("initial namespace %s: %w", name, err)
		}
	}
	return nil
}

// ensureInitialNamespace creates the namespace name as kube-apiserver's system namespaces
// controller does, or restores its kind. Replicas starting together on one database may race:
// a namespace another one created is fine, one it rewrote is read again.
func (r *Registry) ensureInitialNamespace(ctx context.Context, name string) error {
	req := r.namespaceRequest(name)
	req.manager = apiServerManager
	for {
		stored, err := r.store.Get(ctx, req.key())
		if errors.Is(err, sqlstore.ErrNotFound) {
			return r.createInitialNamespace(ctx, req)
		}
		if err != nil {
			return err
		}
		if err := r.restoreKind(ctx, req, stored); !errors.Is(err, sqlstore.ErrConflict) {
			return err
		}
	}
}

// createInitialNamespace creates the namespace req names from the body kube-apiserver's
// loopback client sends, decoded as any request's (kind, apiVersion and the name label
// defaulting gives it), recorded for kube-apiserver.
func (r *Registry) createInitialNamespace(ctx context.Context, req *request) error {
	body, err := json.Marshal(corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: req.name},
	})
	if err != nil {
		return err
	}
	content, _, err := req.res.Typed().Decode(body)
	if err != nil {
		return err
	}
	if _, err := r.create(ctx, req, &unstructured.Unstructured{Object: content}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// restoreKind rewrites stored with its kind if it has none: earlier versions of sqlkube created
// the initial namespaces without one, and clients (kubectl, client-go's decoders) refuse an object
// without its kind. The database is repaired once, at start, rather than every read: gets,
// lists and watches serve the stored bytes as they are. The rewrite is a new revision, so that
// watchers that cached the object without its kind get it again.
func (r *Registry) restoreKind(ctx context.Context, req *request, stored sqlstore.Object) error {
	ns, err := storedobj.DecodeStored(stored.Value)
	if err != nil || ns.GetKind() != "" {
		return err
	}
	ns.SetKind(req.res.Kind)
	_, err = r.write(ctx, req, objectWrite(sqlstore.OpUpdate, req.key(), stored.Revision, req.res, ns))
	return err
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
		return false, storedobj.StorageError(err, namespacesGR, namespace)
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
	if err := storedobj.UnmarshalStored(value, &ns); err != nil {
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
