package server

import (
	"net/http"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// ownedBy is a reference to the config map owner.
func ownedBy(owner *corev1.ConfigMap, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: &block}
}

// ownerWithDependents makes the config map "owner" in default, a config map and a widget it owns.
func ownerWithDependents(t *testing.T, c clients) *corev1.ConfigMap {
	t.Helper()
	owner := createConfigMap(t, c, "default", metav1.ObjectMeta{Name: "owner"})
	createConfigMap(t, c, "default", metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{ownedBy(owner, true)}})
	createWidget(t, c, "default", metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{ownedBy(owner, false)}})
	return owner
}

func (c clients) getConfigMap(t *testing.T, name string) (*corev1.ConfigMap, error) {
	return c.core.CoreV1().ConfigMaps("default").Get(t.Context(), name, metav1.GetOptions{})
}

func (c clients) getWidget(t *testing.T, name string) error {
	_, err := c.dynamic.Resource(widgetsGVR).Namespace("default").Get(t.Context(), name, metav1.GetOptions{})
	return err
}

func (c clients) deleteConfigMap(t *testing.T, name string, policy metav1.DeletionPropagation) {
	t.Helper()
	if err := c.core.CoreV1().ConfigMaps("default").Delete(t.Context(), name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		t.Fatalf("deleting configmap %s: %v", name, err)
	}
}

func TestGarbageCollectorPropagation(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		c := newClients(t, api)
		createWidgetType(t, api)

		t.Run("Background", func(t *testing.T) {
			ownerWithDependents(t, c)
			c.deleteConfigMap(t, "owner", metav1.DeletePropagationBackground)
			waitGone(t, "the dependent config map", func() error { _, err := c.getConfigMap(t, "dependent"); return err })
			waitGone(t, "the dependent widget", func() error { return c.getWidget(t, "dependent") })
		})

		t.Run("Orphan", func(t *testing.T) {
			ownerWithDependents(t, c)
			// The owner is kept with the orphan finalizer until its dependents are orphaned.
			marked := api.do("DELETE", cmPath+"/owner?propagationPolicy=Orphan", "").expect(t, http.StatusOK).object(t)
			if f := nested(marked, "metadata", "finalizers"); !slices.Equal(anyStrings(f), []string{"orphan"}) || str(marked, "metadata", "deletionTimestamp") == "" {
				t.Fatalf("owner deleted with Orphan: %v", marked)
			}
			waitGone(t, "the owner", func() error { _, err := c.getConfigMap(t, "owner"); return err })
			dependent, err := c.getConfigMap(t, "dependent")
			if err != nil || dependent.OwnerReferences != nil || dependent.DeletionTimestamp != nil {
				t.Fatalf("orphaned config map: %+v, %v", dependent, err)
			}
			widget, err := c.dynamic.Resource(widgetsGVR).Namespace("default").Get(t.Context(), "dependent", metav1.GetOptions{})
			if err != nil || widget.GetOwnerReferences() != nil {
				t.Fatalf("orphaned widget: %v, %v", widget, err)
			}
			c.deleteConfigMap(t, "dependent", metav1.DeletePropagationBackground)
			if err := c.dynamic.Resource(widgetsGVR).Namespace("default").Delete(t.Context(), "dependent", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		})

		t.Run("Foreground", func(t *testing.T) {
			owner := ownerWithDependents(t, c)
			// A blocking dependent held by a finalizer keeps the owner.
			createConfigMap(t, c, "default", metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"},
				OwnerReferences: []metav1.OwnerReference{ownedBy(owner, true)}})
			c.deleteConfigMap(t, "owner", metav1.DeletePropagationForeground)
			waitGone(t, "the dependent config map", func() error { _, err := c.getConfigMap(t, "dependent"); return err })
			waitGone(t, "the dependent widget", func() error { return c.getWidget(t, "dependent") })
			var held *corev1.ConfigMap
			eventually(t, "the held dependent is being deleted", func() bool {
				held, _ = c.getConfigMap(t, "held")
				return held != nil && held.DeletionTimestamp != nil
			})
			waiting, err := c.getConfigMap(t, "owner")
			if err != nil || waiting.DeletionTimestamp == nil || !slices.Equal(waiting.Finalizers, []string{"foregroundDeletion"}) {
				t.Fatalf("owner waiting for its dependents: %+v, %v", waiting, err)
			}
			held.Finalizers = nil
			if _, err := c.core.CoreV1().ConfigMaps("default").Update(t.Context(), held, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitGone(t, "the owner", func() error { _, err := c.getConfigMap(t, "owner"); return err })
		})
	})
}

func TestGarbageCollectorWaitsForEveryOwner(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		c := newClients(t, api)
		first := createConfigMap(t, c, "default", metav1.ObjectMeta{Name: "first"})
		second := createConfigMap(t, c, "default", metav1.ObjectMeta{Name: "second"})
		createConfigMap(t, c, "default", metav1.ObjectMeta{Name: "shared", OwnerReferences: []metav1.OwnerReference{ownedBy(first, false), ownedBy(second, false)}})

		c.deleteConfigMap(t, "first", metav1.DeletePropagationBackground)
		// The reference to the owner that went is removed; the other owner keeps the object.
		var shared *corev1.ConfigMap
		eventually(t, "the reference to the deleted owner is removed", func() bool {
			shared, _ = c.getConfigMap(t, "shared")
			return shared != nil && len(shared.OwnerReferences) == 1
		})
		if shared.OwnerReferences[0].UID != second.UID || shared.DeletionTimestamp != nil {
			t.Fatalf("object with an owner left: %+v", shared)
		}
		c.deleteConfigMap(t, "second", metav1.DeletePropagationBackground)
		waitGone(t, "the object without owners", func() error { _, err := c.getConfigMap(t, "shared"); return err })
	})
}

func TestGarbageCollectorDeletesObjectsWithoutOwners(t *testing.T) {
	api := sqliteAPI(t)
	c := newClients(t, api)
	missing := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "never", UID: "no-such-uid"}
	createConfigMap(t, c, "default", metav1.ObjectMeta{Name: "dangling", OwnerReferences: []metav1.OwnerReference{missing}})
	waitGone(t, "an object whose owner never existed", func() error { _, err := c.getConfigMap(t, "dangling"); return err })
	// An owner of a kind not served cannot be looked up: the object stays.
	unknown := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Unserved", Name: "x", UID: "some-uid"}
	createConfigMap(t, c, "default", metav1.ObjectMeta{Name: "unresolved", OwnerReferences: []metav1.OwnerReference{unknown}})
	createConfigMap(t, c, "default", metav1.ObjectMeta{Name: "later", OwnerReferences: []metav1.OwnerReference{missing}})
	waitGone(t, "an object created after", func() error { _, err := c.getConfigMap(t, "later"); return err })
	if _, err := c.getConfigMap(t, "unresolved"); err != nil {
		t.Fatalf("object with an owner of an unknown kind: %v", err)
	}
}

func TestGarbageCollectorForegroundEvents(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		c := newClients(t, api)
		owner := createConfigMap(t, c, "default", metav1.ObjectMeta{Name: "owner"})
		child := createConfigMap(t, c, "default", metav1.ObjectMeta{Name: "child", OwnerReferences: []metav1.OwnerReference{ownedBy(owner, true)}})
		w, err := c.core.CoreV1().ConfigMaps("default").Watch(t.Context(), metav1.ListOptions{ResourceVersion: child.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		c.deleteConfigMap(t, "owner", metav1.DeletePropagationForeground)

		// The owner is marked, its dependent deleted, then the owner goes.
		events := receiveEvents(t, w, 3)
		wantEventTypes(t, events, watch.Modified, watch.Deleted, watch.Deleted)
		marked, deletedChild, deletedOwner := events[0].Object.(*corev1.ConfigMap), events[1].Object.(*corev1.ConfigMap), events[2].Object.(*corev1.ConfigMap)
		if marked.DeletionTimestamp == nil {
			t.Fatalf("owner marked for deletion without deletionTimestamp: %+v", marked.ObjectMeta)
		}
		zero := int64(0)
		wantMarked := owner.DeepCopy()
		wantMarked.ResourceVersion, wantMarked.DeletionTimestamp = marked.ResourceVersion, marked.DeletionTimestamp
		wantMarked.DeletionGracePeriodSeconds, wantMarked.Finalizers = &zero, []string{"foregroundDeletion"}
		wantSameObject(t, "owner marked for foreground deletion", marked, wantMarked)
		wantChild := child.DeepCopy()
		wantChild.ResourceVersion = deletedChild.ResourceVersion
		wantSameObject(t, "deleted dependent", deletedChild, wantChild)
		// The owner's last state is the marked one; what its deletion carries in
		// metadata.finalizers is the delete path's choice, not the collector's.
		wantOwner := marked.DeepCopy()
		wantOwner.ResourceVersion, wantOwner.Finalizers = deletedOwner.ResourceVersion, deletedOwner.Finalizers
		wantSameObject(t, "deleted owner", deletedOwner, wantOwner)
		if _, err := c.getConfigMap(t, "owner"); !apierrors.IsNotFound(err) {
			t.Fatalf("owner after its deletion: %v", err)
		}
	})
}

// wantSameObject compares objects, their type meta aside (typed clients drop it).
func wantSameObject(t *testing.T, what string, got, want runtime.Object) {
	t.Helper()
	got, want = got.DeepCopyObject(), want.DeepCopyObject()
	got.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	want.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Fatalf("%s\n got %+v\nwant %+v", what, got, want)
	}
}

func anyStrings(v any) []string {
	list, _ := v.([]any)
	out := []string{}
	for _, s := range list {
		str, _ := s.(string)
		out = append(out, str)
	}
	return out
}
