package perns

import (
	"context"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/controllers"
	"github.com/sqlkube/sqlkube/server/controllers/controllertest"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// rootCA is an object with fixed content, as the root CA publisher keeps.
func rootCA(env *controllertest.Env) Object {
	return Object{Resource: env.Resource("", "configmaps"), Name: "kube-root-ca.crt",
		Content:     map[string]any{"data": map[string]any{"ca.crt": "CA"}},
		Annotations: map[string]string{"kubernetes.io/description": "the CA"}}
}

// signalling is a store that says when a resource's watch starts.
type signalling struct {
	controllers.Storage
	resource string
	watching chan struct{}
	once     sync.Once
}

func (s *signalling) Watch(ctx context.Context, opts sqlstore.WatchOptions) (*sqlstore.Watcher, error) {
	w, err := s.Storage.Watch(ctx, opts)
	if err == nil && opts.Resource == s.resource {
		s.once.Do(func() { close(s.watching) })
	}
	return w, err
}

// followSignalled is env's Deps on a store that closes following once the controller follows
// resource: every change after it then reaches the controller.
func followSignalled(env *controllertest.Env, resource string) (deps controllers.Deps, following <-chan struct{}) {
	store := &signalling{Storage: env.Store, resource: resource, watching: make(chan struct{})}
	deps = env.Deps
	deps.Store = store
	return deps, store.watching
}

// waitFor waits until the object ref names exists and ok says it is as kept.
func waitFor(t *testing.T, env *controllertest.Env, what string, ref registry.Ref, ok func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	var obj *unstructured.Unstructured
	controllertest.Eventually(t, what, func() bool {
		var err error
		obj, err = env.Get(ref)
		return err == nil && ok(obj)
	})
	return obj
}

func holdsCA(obj *unstructured.Unstructured) bool {
	ca, _, _ := unstructured.NestedString(obj.Object, "data", "ca.crt")
	return ca == "CA"
}

// The object is created in the namespaces that exist and in each new one, with its content and
// annotations, written as the controllers write; deleted, it comes back; its content changed,
// the content is put back and the rest kept.
func TestKeepsObjectInEveryNamespace(t *testing.T) {
	controllertest.Backends(t, func(t *testing.T, env *controllertest.Env) {
		kept := rootCA(env)
		deps, following := followSignalled(env, "configmaps")
		go Run(t.Context(), deps, env.Resource("", "namespaces"), kept)
		inDefault := env.Ref("", "configmaps", "default", kept.Name)
		created := waitFor(t, env, "the object is in default", inDefault, holdsCA)
		if created.GetAnnotations()["kubernetes.io/description"] != "the CA" || !managedBy(created, controllers.FieldManager) {
			t.Fatalf("created object: %v", created)
		}
		env.CreateNamed(env.Ref("", "namespaces", "", ""), metav1.ObjectMeta{Name: "fresh"})
		waitFor(t, env, "the object is in a new namespace", env.Ref("", "configmaps", "fresh", kept.Name), holdsCA)

		// A deletion is followed once the kept objects are: wait for that.
		select {
		case <-following:
		case <-time.After(10 * time.Second):
			t.Fatal("the controller does not follow the kept objects")
		}
		env.Delete(inDefault, "")
		restored := waitFor(t, env, "the deleted object is back", inDefault, holdsCA)
		if restored.GetUID() == created.GetUID() {
			t.Fatal("the object was not deleted")
		}

		changed := restored.DeepCopy()
		changed.Object["data"] = map[string]any{"ca.crt": "other"}
		changed.SetLabels(map[string]string{"mine": "yes"})
		if _, _, err := env.Registry.Update(t.Context(), inDefault, changed, &metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if back := waitFor(t, env, "the content is put back", inDefault, holdsCA); back.GetLabels()["mine"] != "yes" {
			t.Fatalf("the restore dropped what else changed: %v", back)
		}
	})
}

// An object without fixed content is created once and then left to its owner; a namespace being
// deleted (here held by its kubernetes finalizer, no namespace controller running) gets none.
func TestLeavesContentToItsOwner(t *testing.T) {
	env := controllertest.New(t, sqltest.SQLiteDSN(t))
	env.CreateNamed(env.Ref("", "namespaces", "", ""), metav1.ObjectMeta{Name: "going"})
	env.Delete(env.Ref("", "namespaces", "", "going"), "")
	sa := Object{Resource: env.Resource("", "serviceaccounts"), Name: "default"}
	go Run(t.Context(), env.Deps, env.Resource("", "namespaces"), sa)
	inDefault := env.Ref("", "serviceaccounts", "default", "default")
	created := waitFor(t, env, "the default ServiceAccount", inDefault, func(*unstructured.Unstructured) bool { return true })

	changed := created.DeepCopy()
	changed.SetLabels(map[string]string{"mine": "yes"})
	if _, _, err := env.Registry.Update(t.Context(), inDefault, changed, &metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A namespace created after is served after the one changed: once its object is there, the
	// change has been seen and left alone.
	env.CreateNamed(env.Ref("", "namespaces", "", ""), metav1.ObjectMeta{Name: "later"})
	waitFor(t, env, "the object in a later namespace", env.Ref("", "serviceaccounts", "later", "default"), func(*unstructured.Unstructured) bool { return true })
	if obj, err := env.Get(inDefault); err != nil || obj.GetLabels()["mine"] != "yes" {
		t.Fatalf("the owner's change: %v, %v", obj, err)
	}
	if _, err := env.Get(env.Ref("", "serviceaccounts", "going", "default")); !apierrors.IsNotFound(err) {
		t.Fatalf("a namespace being deleted got the object: %v", err)
	}
}

// managedBy reports whether obj's only manager is manager.
func managedBy(obj *unstructured.Unstructured, manager string) bool {
	entries := obj.GetManagedFields()
	return len(entries) == 1 && entries[0].Manager == manager
}
