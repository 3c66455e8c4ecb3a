package gc

import (
	"slices"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/controllers/controllertest"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// collectorTest is a running garbage collector and the config maps of the default namespace.
type collectorTest struct {
	*controllertest.Env
	t *testing.T
}

func startCollector(t *testing.T, env *controllertest.Env) collectorTest {
	go Run(t.Context(), env.Deps)
	return collectorTest{Env: env, t: t}
}

// For is c reporting to t, for a subtest.
func (c collectorTest) For(t *testing.T) collectorTest {
	return collectorTest{Env: c.Env.For(t), t: t}
}

func (c collectorTest) configMap(name string) registry.Ref {
	return c.Ref("", "configmaps", "default", name)
}

func (c collectorTest) createConfigMap(name string, owners ...metav1.OwnerReference) *unstructured.Unstructured {
	c.t.Helper()
	return c.CreateNamed(c.configMap(""), metav1.ObjectMeta{Name: name, OwnerReferences: owners})
}

func (c collectorTest) getConfigMap(name string) (*unstructured.Unstructured, error) {
	return c.Get(c.configMap(name))
}

// waitGone waits until the object ref names is NotFound.
func (c collectorTest) waitGone(what string, ref registry.Ref) {
	c.t.Helper()
	controllertest.Eventually(c.t, what+" is gone", func() bool { _, err := c.Get(ref); return apierrors.IsNotFound(err) })
}

// ownedBy is a reference to the config map owner.
func ownedBy(owner *unstructured.Unstructured, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.GetName(), UID: owner.GetUID(), BlockOwnerDeletion: &block}
}

// ownerWithDependents makes the config map "owner" in default, a config map and a widget it owns.
func (c collectorTest) ownerWithDependents(widgets registry.Ref) *unstructured.Unstructured {
	c.t.Helper()
	owner := c.createConfigMap("owner")
	c.createConfigMap("dependent", ownedBy(owner, true))
	widgets.Namespace = "default"
	c.CreateNamed(widgets, metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{ownedBy(owner, false)}})
	return owner
}

func TestGarbageCollectorPropagation(t *testing.T) {
	controllertest.Backends(t, func(t *testing.T, env *controllertest.Env) {
		widgets := env.ServeWidgets()
		c := startCollector(t, env)
		widget := widgets
		widget.Namespace, widget.Name = "default", "dependent"

		t.Run("Background", func(t *testing.T) {
			c := c.For(t)
			c.ownerWithDependents(widgets)
			c.Delete(c.configMap("owner"), metav1.DeletePropagationBackground)
			c.waitGone("the dependent config map", c.configMap("dependent"))
			c.waitGone("the dependent widget", widget)
		})

		t.Run("Orphan", func(t *testing.T) {
			c := c.For(t)
			c.ownerWithDependents(widgets)
			// The owner is kept with the orphan finalizer until its dependents are orphaned.
			marked := c.Delete(c.configMap("owner"), metav1.DeletePropagationOrphan)
			if !slices.Equal(marked.GetFinalizers(), []string{"orphan"}) || marked.GetDeletionTimestamp() == nil {
				t.Fatalf("owner deleted with Orphan: %v", marked)
			}
			c.waitGone("the owner", c.configMap("owner"))
			dependent, err := c.getConfigMap("dependent")
			if err != nil || dependent.GetOwnerReferences() != nil || dependent.GetDeletionTimestamp() != nil {
				t.Fatalf("orphaned config map: %v, %v", dependent, err)
			}
			if orphaned, err := c.Get(widget); err != nil || orphaned.GetOwnerReferences() != nil {
				t.Fatalf("orphaned widget: %v, %v", orphaned, err)
			}
			c.Delete(c.configMap("dependent"), metav1.DeletePropagationBackground)
			c.Delete(widget, "")
		})

		t.Run("Foreground", func(t *testing.T) {
			c := c.For(t)
			owner := c.ownerWithDependents(widgets)
			// A blocking dependent held by a finalizer keeps the owner.
			c.CreateNamed(c.configMap(""), metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"},
				OwnerReferences: []metav1.OwnerReference{ownedBy(owner, true)}})
			c.Delete(c.configMap("owner"), metav1.DeletePropagationForeground)
			c.waitGone("the dependent config map", c.configMap("dependent"))
			c.waitGone("the dependent widget", widget)
			var held *unstructured.Unstructured
			controllertest.Eventually(t, "the held dependent is being deleted", func() bool {
				held, _ = c.getConfigMap("held")
				return held != nil && held.GetDeletionTimestamp() != nil
			})
			waiting, err := c.getConfigMap("owner")
			if err != nil || waiting.GetDeletionTimestamp() == nil || !slices.Equal(waiting.GetFinalizers(), []string{"foregroundDeletion"}) {
				t.Fatalf("owner waiting for its dependents: %v, %v", waiting, err)
			}
			held.SetFinalizers(nil)
			if _, _, err := c.Registry.Update(t.Context(), c.configMap("held"), held, &metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			c.waitGone("the owner", c.configMap("owner"))
		})
	})
}

func TestGarbageCollectorWaitsForEveryOwner(t *testing.T) {
	controllertest.Backends(t, func(t *testing.T, env *controllertest.Env) {
		c := startCollector(t, env)
		first, second := c.createConfigMap("first"), c.createConfigMap("second")
		c.createConfigMap("shared", ownedBy(first, false), ownedBy(second, false))

		c.Delete(c.configMap("first"), metav1.DeletePropagationBackground)
		// The reference to the owner that went is removed; the other owner keeps the object.
		var shared *unstructured.Unstructured
		controllertest.Eventually(t, "the reference to the deleted owner is removed", func() bool {
			shared, _ = c.getConfigMap("shared")
			return shared != nil && len(shared.GetOwnerReferences()) == 1
		})
		if shared.GetOwnerReferences()[0].UID != second.GetUID() || shared.GetDeletionTimestamp() != nil {
			t.Fatalf("object with an owner left: %v", shared)
		}
		c.Delete(c.configMap("second"), metav1.DeletePropagationBackground)
		c.waitGone("the object without owners", c.configMap("shared"))
	})
}

func TestGarbageCollectorDeletesObjectsWithoutOwners(t *testing.T) {
	c := startCollector(t, controllertest.New(t, sqltest.SQLiteDSN(t)))
	missing := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "never", UID: "no-such-uid"}
	c.createConfigMap("dangling", missing)
	c.waitGone("an object whose owner never existed", c.configMap("dangling"))
	// An owner of a kind not served cannot be looked up: the object stays.
	c.createConfigMap("unresolved", metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Unserved", Name: "x", UID: "some-uid"})
	c.createConfigMap("later", missing)
	c.waitGone("an object created after", c.configMap("later"))
	if _, err := c.getConfigMap("unresolved"); err != nil {
		t.Fatalf("object with an owner of an unknown kind: %v", err)
	}
}

func TestGarbageCollectorForegroundEvents(t *testing.T) {
	controllertest.Backends(t, func(t *testing.T, env *controllertest.Env) {
		c := startCollector(t, env)
		owner := c.createConfigMap("owner")
		child := c.createConfigMap("child", ownedBy(owner, true))
		events := controllertest.WatchAfter(t, env.Store, "configmaps", child)
		c.Delete(c.configMap("owner"), metav1.DeletePropagationForeground)

		// The owner is marked, its dependent deleted, then the owner goes.
		got := controllertest.Receive(t, events, 3)
		if ops := []sqlstore.Op{got[0].Op, got[1].Op, got[2].Op}; !slices.Equal(ops, []sqlstore.Op{sqlstore.OpUpdate, sqlstore.OpDelete, sqlstore.OpDelete}) {
			t.Fatalf("event ops %v", ops)
		}
		marked := controllertest.Decode(t, got[0].Object)
		deletedChild, deletedOwner := controllertest.Decode(t, got[1].Object), controllertest.Decode(t, got[2].Object)
		if marked.GetDeletionTimestamp() == nil {
			t.Fatalf("owner marked for deletion without deletionTimestamp: %v", marked)
		}
		zero := int64(0)
		wantMarked := owner.DeepCopy()
		wantMarked.SetResourceVersion(marked.GetResourceVersion())
		wantMarked.SetDeletionTimestamp(marked.GetDeletionTimestamp())
		wantMarked.SetDeletionGracePeriodSeconds(&zero)
		wantMarked.SetFinalizers([]string{"foregroundDeletion"})
		wantSameObject(t, "owner marked for foreground deletion", marked, wantMarked)
		wantChild := child.DeepCopy()
		wantChild.SetResourceVersion(deletedChild.GetResourceVersion())
		wantSameObject(t, "deleted dependent", deletedChild, wantChild)
		// The owner's last state is the marked one; what its deletion carries in
		// metadata.finalizers is the delete path's choice, not the collector's.
		wantOwner := marked.DeepCopy()
		wantOwner.SetResourceVersion(deletedOwner.GetResourceVersion())
		wantOwner.SetFinalizers(deletedOwner.GetFinalizers())
		wantSameObject(t, "deleted owner", deletedOwner, wantOwner)
		if _, err := c.getConfigMap("owner"); !apierrors.IsNotFound(err) {
			t.Fatalf("owner after its deletion: %v", err)
		}
	})
}

// With nothing to orphan, the collector removes the orphan finalizer a delete set; another
// finalizer keeps the object. (The registry's part, setting it, is tested with the registry.)
func TestGarbageCollectorRemovesOrphanFinalizer(t *testing.T) {
	c := startCollector(t, controllertest.New(t, sqltest.SQLiteDSN(t)))
	c.CreateNamed(c.configMap(""), metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}})
	c.Delete(c.configMap("held"), metav1.DeletePropagationOrphan)
	controllertest.Eventually(t, "the orphan finalizer is removed", func() bool {
		held, err := c.getConfigMap("held")
		return err == nil && slices.Equal(held.GetFinalizers(), []string{"example.com/hold"})
	})
}

func wantSameObject(t *testing.T, what string, got, want *unstructured.Unstructured) {
	t.Helper()
	if !apiequality.Semantic.DeepEqual(got.Object, want.Object) {
		t.Fatalf("%s\n got %v\nwant %v", what, got.Object, want.Object)
	}
}
