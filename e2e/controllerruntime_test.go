package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestControllerRuntimeCache checks that controller-runtime's informer cache (list, then watch)
// follows what another client writes: creates, updates and deletes.
func TestControllerRuntimeCache(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		writer, err := client.New(s.restConfig(), client.Options{Scheme: scheme.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		reader := startCache(t, s)

		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "followed", Namespace: "default"}, Data: map[string]string{"v": "1"}}
		if err := writer.Create(ctx, cm); err != nil {
			t.Fatalf("create: %v", err)
		}
		waitForCachedVersion(t, reader, cm.ResourceVersion)

		cm.Data["v"] = "2"
		if err := writer.Update(ctx, cm); err != nil {
			t.Fatalf("update: %v", err)
		}
		waitForCachedVersion(t, reader, cm.ResourceVersion)

		if err := writer.Delete(ctx, cm); err != nil {
			t.Fatalf("delete: %v", err)
		}
		eventually(t, 10*time.Second, "cache sees the delete", func() (bool, error) {
			err := reader.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
			return apierrors.IsNotFound(err), err
		})
	})
}

// startCache starts an informer cache on configmaps, synced, stopped when the test ends.
func startCache(t *testing.T, s *sqlkubeServer) cache.Cache {
	t.Helper()
	c, err := cache.New(s.restConfig(), cache.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetInformer(ctx, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = c.Start(runCtx)
	}()
	t.Cleanup(func() { stop(); <-stopped })
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !c.WaitForCacheSync(syncCtx) {
		t.Fatal("controller-runtime cache did not sync within 30s")
	}
	return c
}

// waitForCachedVersion waits until the cache holds configmap default/followed at resourceVersion.
func waitForCachedVersion(t *testing.T, reader client.Reader, resourceVersion string) {
	t.Helper()
	eventually(t, 10*time.Second, "cache at resourceVersion "+resourceVersion, func() (bool, error) {
		var got corev1.ConfigMap
		err := reader.Get(ctx, client.ObjectKey{Namespace: "default", Name: "followed"}, &got)
		return err == nil && got.ResourceVersion == resourceVersion, err
	})
}
