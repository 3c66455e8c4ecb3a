package controllers_test

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/controllers/controllertest"
	"github.com/sqlkube/sqlkube/server/controllers/gc"
	"github.com/sqlkube/sqlkube/server/controllers/namespace"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// runDeletionControllers runs the namespace controller and the garbage collector on env until
// ctx ends, as every replica does.
func runDeletionControllers(ctx context.Context, env *controllertest.Env) {
	go namespace.Run(ctx, env.Deps, env.Resource("", "namespaces"))
	go gc.Run(ctx, env.Deps)
}

func ownedBy(owner *unstructured.Unstructured, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.GetName(), UID: owner.GetUID(), BlockOwnerDeletion: &block}
}

func waitGone(t *testing.T, env *controllertest.Env, what string, ref registry.Ref) {
	t.Helper()
	controllertest.Eventually(t, what+" is gone", func() bool { _, err := env.Get(ref); return apierrors.IsNotFound(err) })
}

// Two replicas on one PostgreSQL database both run the controllers: their writes conflict and
// find objects gone, and the work still finishes, whichever replica took the request.
func TestControllersOnTwoReplicas(t *testing.T) {
	first := controllertest.New(t, sqltest.PostgresDSN(t))
	second := controllertest.OnStore(t, first.Store)
	runDeletionControllers(t.Context(), first)
	runDeletionControllers(t.Context(), second)
	configMaps := func(env *controllertest.Env, namespace string) registry.Ref {
		return env.Ref("", "configmaps", namespace, "")
	}
	first.CreateNamed(first.Ref("", "namespaces", "", ""), metav1.ObjectMeta{Name: "demo"})
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		second.CreateNamed(configMaps(second, "demo"), metav1.ObjectMeta{Name: name})
	}
	owner := first.CreateNamed(configMaps(first, "default"), metav1.ObjectMeta{Name: "owner"})
	for _, name := range []string{"x", "y", "z"} {
		second.CreateNamed(configMaps(second, "default"), metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{ownedBy(owner, true)}})
	}
	second.Delete(second.Ref("", "namespaces", "", "demo"), "")
	first.Delete(first.Ref("", "configmaps", "default", "owner"), metav1.DeletePropagationForeground)
	waitGone(t, first, "namespace demo", first.Ref("", "namespaces", "", "demo"))
	waitGone(t, second, "the foreground-deleted owner", second.Ref("", "configmaps", "default", "owner"))
	for _, name := range []string{"x", "y", "z"} {
		if _, err := first.Get(first.Ref("", "configmaps", "default", name)); !apierrors.IsNotFound(err) {
			t.Errorf("dependent %s: %v", name, err)
		}
	}
}

// Work left when a replica stopped (a namespace being deleted, an owner gone with its
// dependents left) is finished by the next to start on the database, from its lists.
func TestControllersResumeAfterRestart(t *testing.T) {
	env := controllertest.New(t, sqltest.SQLiteDSN(t))
	stopped, stop := context.WithCancel(t.Context())
	runDeletionControllers(stopped, env)
	stop() // the controllers stop; the registry still writes
	env.CreateNamed(env.Ref("", "namespaces", "", ""), metav1.ObjectMeta{Name: "demo"})
	env.CreateNamed(env.Ref("", "configmaps", "demo", ""), metav1.ObjectMeta{Name: "content"})
	owner := env.CreateNamed(env.Ref("", "configmaps", "default", ""), metav1.ObjectMeta{Name: "owner"})
	env.CreateNamed(env.Ref("", "configmaps", "default", ""), metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{ownedBy(owner, false)}})
	env.Delete(env.Ref("", "namespaces", "", "demo"), "")
	env.Delete(env.Ref("", "configmaps", "default", "owner"), metav1.DeletePropagationBackground)
	if _, err := env.Get(env.Ref("", "configmaps", "default", "dependent")); err != nil {
		t.Fatalf("dependent with the collector stopped: %v", err)
	}

	runDeletionControllers(t.Context(), controllertest.OnStore(t, env.Store))
	waitGone(t, env, "namespace demo", env.Ref("", "namespaces", "", "demo"))
	waitGone(t, env, "the dependent", env.Ref("", "configmaps", "default", "dependent"))
}
