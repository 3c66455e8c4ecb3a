// Package crdcleanup deletes the objects of a deleted CustomResourceDefinition, as
// apiextensions-apiserver's CRD finalizer controller does: a CRD marked for deletion keeps the
// customresourcecleanup.apiextensions.k8s.io finalizer (the CRD's delete adds it) until its
// objects are gone; they are deleted through the registry, as its custom resource storage would
// delete them (objects with finalizers are marked and left to their controllers), and then the
// finalizer goes, which deletes the CRD unless other finalizers hold it.
package crdcleanup

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/controllers"
	"github.com/sqlkube/sqlkube/server/crdtype"
	"github.com/sqlkube/sqlkube/server/follow"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// fieldManager is who the CRD's writes are recorded as: apiextensions-apiserver's controllers
// run in kube-apiserver and write through its loopback client.
const fieldManager = "kube-apiserver"

// Controller cleans up after deleted CRDs.
type Controller struct {
	deps controllers.Deps
	// crds is the served customresourcedefinitions type.
	crds *resource.Resource
}

// New makes the controller; Run runs it.
func New(deps controllers.Deps) (*Controller, error) {
	crds, ok := deps.Catalog.Lookup(builtin.APIExtensionsGroup, "v1", "customresourcedefinitions")
	if !ok {
		return nil, errors.New("the catalog serves no customresourcedefinitions")
	}
	return &Controller{deps: deps, crds: crds}, nil
}

// Run cleans up after the CRDs marked for deletion, those already stored and those to come,
// until ctx ends. Every replica may run it: its writes are conditional.
func (c *Controller) Run(ctx context.Context) {
	controllers.SyncNames(ctx, c.deps, builtin.CRDStorageName, c, "cleaning up a deleted CustomResourceDefinition")
}

// NeedsSync reports whether the stored CRD o awaits its cleanup; only its metadata is read.
func (c *Controller) NeedsSync(o sqlstore.Object) bool {
	var m storedobj.MetadataOnly
	return storedobj.UnmarshalStored(o.Value, &m) == nil && awaitsCleanup(&m.Metadata)
}

func awaitsCleanup(m *metav1.ObjectMeta) bool {
	return m.DeletionTimestamp != nil && slices.Contains(m.Finalizers, crdtype.CleanupFinalizer)
}

// Sync makes one pass over the CRD name; done is false when it must be looked at again
// (objects remain, or a write failed or conflicted).
func (c *Controller) Sync(ctx context.Context, name string) (done bool, err error) {
	ref := registry.Ref{Resource: c.crds, Name: name}
	stored, err := c.deps.Registry.Get(ctx, ref, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	crd, err := crdtype.DecodeJSON(stored.Value)
	if err != nil || !crdtype.IsBeingCleanedUp(crd) {
		return err == nil, err
	}
	// The catalog serves what the CRD's objects are deleted as: it must have seen this state.
	if err := c.deps.Catalog.WaitForRevision(ctx, stored.Revision); err != nil {
		return false, err
	}
	outcome, err := c.deleteInstances(ctx, crd)
	if outcome == nil {
		return false, err
	}
	return controllers.WriteOutcome(c.removeCleanupFinalizer(ctx, ref, crd, *outcome))
}

// deleteInstances deletes the objects of a CRD being deleted. It returns the Terminating
// condition apiextensions-apiserver ends the cleanup with, or nil while objects remain.
func (c *Controller) deleteInstances(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinitionCondition, error) {
	finished := func(reason, message string) *apiextensionsv1.CustomResourceDefinitionCondition {
		return &apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionFalse, Reason: reason, Message: message,
		}
	}
	res, served := c.deps.Catalog.StorageResources()[crd.Name]
	switch {
	case served && res.CRDName == "":
		// Its objects are a built-in's: a CRD never served under that name owns none.
		return finished("OverlappingBuiltInResource", "instances overlap with built-in resources in storage"), nil
	case !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established):
		return finished("NeverEstablished", "resource was never established"), nil
	case !served: // no version is served: its objects are still deleted, as their storage version
		if res = c.deps.Catalog.StorageVersionResource(crd); res == nil {
			return nil, fmt.Errorf("the storage version of CustomResourceDefinition %s cannot be built", crd.Name)
		}
	}
	remaining, err := c.deleteObjects(ctx, res)
	if err != nil || remaining > 0 {
		return nil, err
	}
	return finished("InstanceDeletionCompleted", "removed all instances"), nil
}

// deleteObjects deletes every object of res and returns how many remain: those with
// finalizers are marked for deletion and left to their controllers. Objects created meanwhile
// are left to the next pass.
func (c *Controller) deleteObjects(ctx context.Context, res *resource.Resource) (remaining int, err error) {
	err = follow.Pages(ctx, c.deps.Store, res.StorageName, "", func(page []sqlstore.Object) error {
		for _, o := range page {
			_, deleted, err := c.deps.Registry.Delete(ctx, registry.Ref{Resource: res, Namespace: o.Namespace, Name: o.Name}, &metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			if err == nil && !deleted {
				remaining++
			}
		}
		return nil
	})
	return remaining, err
}

// removeCleanupFinalizer ends a CRD's cleanup: it records the outcome in the CRD's status, then
// removes the finalizer, which deletes the CRD unless other finalizers hold it. Both writes
// apply only to the CRD as read (a conflict means the next pass looks again).
func (c *Controller) removeCleanupFinalizer(ctx context.Context, ref registry.Ref, crd *apiextensionsv1.CustomResourceDefinition, outcome apiextensionsv1.CustomResourceDefinitionCondition) error {
	crd = crd.DeepCopy()
	apihelpers.SetCRDCondition(crd, outcome)
	statusRef := ref
	statusRef.Subresource = "status"
	stored, err := c.update(ctx, statusRef, crd)
	if err != nil {
		return err
	}
	if crd, err = crdtype.DecodeJSON(stored.Value); err != nil {
		return err
	}
	apihelpers.CRDRemoveFinalizer(crd, crdtype.CleanupFinalizer)
	_, err = c.update(ctx, ref, crd)
	return err
}

func (c *Controller) update(ctx context.Context, ref registry.Ref, crd *apiextensionsv1.CustomResourceDefinition) (sqlstore.Object, error) {
	obj := &unstructured.Unstructured{}
	crdtype.Encode(crd, obj)
	stored, _, err := c.deps.Registry.Update(ctx, ref, obj, &metav1.UpdateOptions{FieldManager: fieldManager})
	return stored, err
}
