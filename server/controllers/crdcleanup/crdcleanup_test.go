package crdcleanup

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/controllers"
	"github.com/sqlkube/sqlkube/server/controllers/controllertest"
	"github.com/sqlkube/sqlkube/server/crdtype"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// The objects of a deleted CRD are deleted (one with a finalizer only marked, and waited for),
// then the cleanup finalizer goes, which deletes the CRD and stops serving its type.
func TestCleanupDeletesObjectsThenTheCRD(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		deps := controllertest.New(t, dsn).Deps
		createCRD(t, deps, "widgets", nil)
		widgets := lookup(t, deps, "example.com", "v1", "widgets")
		createWidget(t, deps, widgets, "plain", nil)
		createWidget(t, deps, widgets, "finalized", []string{"example.com/keep"})
		run(t, deps)

		deleteCRD(t, deps, "widgets.example.com")
		controllertest.Eventually(t, "the object without finalizers is deleted", func() bool {
			return apierrors.IsNotFound(getErr(deps, widgets, "plain"))
		})
		var marked *unstructured.Unstructured
		controllertest.Eventually(t, "the object with a finalizer is marked for deletion", func() bool {
			marked = get(t, deps, widgets, "finalized")
			return marked.GetDeletionTimestamp() != nil
		})
		if crd := getCRD(t, deps, "widgets.example.com"); !slices.Contains(crd.Finalizers, crdtype.CleanupFinalizer) {
			t.Fatalf("the CRD lost its cleanup finalizer while an object remains: %v", crd.Finalizers)
		}

		// Its controller lets the object go: the CRD follows.
		marked.SetFinalizers(nil)
		if _, _, err := deps.Registry.Update(t.Context(), registry.Ref{Resource: widgets, Namespace: "default", Name: "finalized"}, marked, &metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		crds := lookup(t, deps, builtin.APIExtensionsGroup, "v1", "customresourcedefinitions")
		controllertest.Eventually(t, "the CRD is deleted", func() bool {
			return apierrors.IsNotFound(getErr(deps, crds, "widgets.example.com"))
		})
		controllertest.Eventually(t, "the type is no longer served", func() bool {
			_, served := deps.Catalog.Lookup("example.com", "v1", "widgets")
			return !served
		})
	})
}

// A CRD held by another finalizer loses only the cleanup one, with the outcome in its status.
func TestCleanupLeavesOtherFinalizers(t *testing.T) {
	deps := controllertest.New(t, sqltest.SQLiteDSN(t)).Deps
	createCRD(t, deps, "widgets", []string{"example.com/keep"})
	createWidget(t, deps, lookup(t, deps, "example.com", "v1", "widgets"), "plain", nil)
	run(t, deps)
	deleteCRD(t, deps, "widgets.example.com")

	crd := waitForCleanup(t, deps, "widgets.example.com")
	if !slices.Equal(crd.Finalizers, []string{"example.com/keep"}) {
		t.Errorf("finalizers %v, want the other one kept", crd.Finalizers)
	}
	wantTerminating(t, crd, "InstanceDeletionCompleted", "removed all instances")
}

// The objects of a CRD none of whose versions is served any longer are deleted all the same, as
// their storage version (as envtest's "unserved CRDs" spec expects of kube).
func TestCleanupOfACRDNoLongerServed(t *testing.T) {
	deps := controllertest.New(t, sqltest.SQLiteDSN(t)).Deps
	createCRD(t, deps, "widgets", nil)
	createWidget(t, deps, lookup(t, deps, "example.com", "v1", "widgets"), "plain", nil)
	crd := getCRD(t, deps, "widgets.example.com")
	crd.Spec.Versions[0].Served = false
	crds := lookup(t, deps, builtin.APIExtensionsGroup, "v1", "customresourcedefinitions")
	obj, err := controllers.ToUnstructured(crd, crds)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := deps.Registry.Update(t.Context(), registry.Ref{Resource: crds, Name: crd.Name}, obj, &metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "the type is no longer served", func() bool {
		_, served := deps.Catalog.Lookup("example.com", "v1", "widgets")
		return !served
	})
	run(t, deps)
	deleteCRD(t, deps, "widgets.example.com")

	controllertest.Eventually(t, "the CRD is deleted", func() bool {
		return apierrors.IsNotFound(getErr(deps, crds, "widgets.example.com"))
	})
	stored := deps.Catalog.StorageVersionResource(crd)
	if err := getErr(deps, stored, "plain"); !apierrors.IsNotFound(err) {
		t.Errorf("the object of the unserved type: %v, want it deleted", err)
	}
}

// A CRD marked for deletion before the controller starts is cleaned up when it starts; one that
// was never established has no objects to delete.
func TestCleanupOfACRDMarkedBeforeTheStartThatNeverWasEstablished(t *testing.T) {
	deps := controllertest.New(t, sqltest.SQLiteDSN(t)).Deps
	createCRD(t, deps, "widgets", nil)
	// The same kind in the same group: its names are refused, so it is never established.
	createCRDOfKind(t, deps, "gizmos", "Widget", []string{"example.com/keep"})
	crd := getCRD(t, deps, "gizmos.example.com")
	if apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		t.Fatal("a CRD whose names are taken is established")
	}
	deleteCRD(t, deps, "gizmos.example.com")
	run(t, deps)

	crd = waitForCleanup(t, deps, "gizmos.example.com")
	wantTerminating(t, crd, "NeverEstablished", "resource was never established")
}

// run runs the controller until the test ends.
func run(t *testing.T, deps controllers.Deps) {
	t.Helper()
	c, err := New(deps)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func lookup(t *testing.T, deps controllers.Deps, group, version, name string) *resource.Resource {
	t.Helper()
	r, ok := deps.Catalog.Lookup(group, version, name)
	if !ok {
		t.Fatalf("%s/%s %s is not served", group, version, name)
	}
	return r
}

// createCRD creates the CRD plural.example.com, of kind Widget.
func createCRD(t *testing.T, deps controllers.Deps, plural string, finalizers []string) {
	t.Helper()
	createCRDOfKind(t, deps, plural, "Widget", finalizers)
}

// createCRDOfKind creates the CRD plural.example.com, of kind.
func createCRDOfKind(t *testing.T, deps controllers.Deps, plural, kind string, finalizers []string) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".example.com", Finalizers: finalizers},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: new(bool(true))}}}},
		},
	}
	crds := lookup(t, deps, builtin.APIExtensionsGroup, "v1", "customresourcedefinitions")
	obj, err := controllers.ToUnstructured(crd, crds)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := deps.Registry.Create(t.Context(), registry.Ref{Resource: crds}, obj, &metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRD %s: %v", crd.Name, err)
	}
}

func createWidget(t *testing.T, deps controllers.Deps, widgets *resource.Resource, name string, finalizers []string) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget"}}
	obj.SetName(name)
	obj.SetFinalizers(finalizers)
	if _, _, err := deps.Registry.Create(t.Context(), registry.Ref{Resource: widgets, Namespace: "default"}, obj, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// deleteCRD deletes a CRD, which, as its type's rules say, only marks it for cleanup.
func deleteCRD(t *testing.T, deps controllers.Deps, name string) {
	t.Helper()
	crds := lookup(t, deps, builtin.APIExtensionsGroup, "v1", "customresourcedefinitions")
	_, deleted, err := deps.Registry.Delete(t.Context(), registry.Ref{Resource: crds, Name: name}, &metav1.DeleteOptions{})
	if err != nil || deleted {
		t.Fatalf("deleting CRD %s: deleted %t, %v; want it marked for cleanup", name, deleted, err)
	}
}

func getErr(deps controllers.Deps, res *resource.Resource, name string) error {
	ref := registry.Ref{Resource: res, Name: name}
	if res.Namespaced {
		ref.Namespace = "default"
	}
	_, err := deps.Registry.Get(context.Background(), ref, &metav1.GetOptions{})
	return err
}

func get(t *testing.T, deps controllers.Deps, res *resource.Resource, name string) *unstructured.Unstructured {
	t.Helper()
	stored, err := deps.Registry.Get(t.Context(), registry.Ref{Resource: res, Namespace: "default", Name: name}, &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := storedobj.DecodeStored(stored.Value)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func getCRD(t *testing.T, deps controllers.Deps, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crds := lookup(t, deps, builtin.APIExtensionsGroup, "v1", "customresourcedefinitions")
	stored, err := deps.Registry.Get(t.Context(), registry.Ref{Resource: crds, Name: name}, &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crd, err := crdtype.DecodeJSON(stored.Value)
	if err != nil {
		t.Fatal(err)
	}
	return crd
}

// waitForCleanup waits until the CRD name has lost its cleanup finalizer, and returns it.
func waitForCleanup(t *testing.T, deps controllers.Deps, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var crd *apiextensionsv1.CustomResourceDefinition
	controllertest.Eventually(t, "the cleanup finalizer is removed", func() bool {
		crd = getCRD(t, deps, name)
		return !slices.Contains(crd.Finalizers, crdtype.CleanupFinalizer)
	})
	return crd
}

func wantTerminating(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, reason, message string) {
	t.Helper()
	c := apihelpers.FindCRDCondition(crd, apiextensionsv1.Terminating)
	if c == nil || c.Status != apiextensionsv1.ConditionFalse || c.Reason != reason || c.Message != message || c.LastTransitionTime.IsZero() {
		t.Errorf("condition Terminating = %+v, want False %s %q", c, reason, message)
	}
}
