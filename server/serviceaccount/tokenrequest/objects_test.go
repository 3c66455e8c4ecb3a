package tokenrequest

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/catalog"
	"github.com/sqlkube/sqlkube/server/controllers/controllertest"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
)

var _ Resources = (*catalog.Catalog)(nil)

// TestRegistryObjects reads the uids of objects created through the registry, on both
// backends; a missing object, or a resource not served, is NotFound.
func TestRegistryObjects(t *testing.T) {
	controllertest.Backends(t, func(t *testing.T, env *controllertest.Env) {
		types, reg := env.Catalog, env.Registry
		sa := env.Resource("", "serviceaccounts")
		obj := &unstructured.Unstructured{Object: map[string]any{}}
		obj.SetName("bot")
		created, _, err := reg.Create(t.Context(), registry.Ref{Resource: sa, Namespace: "default"}, obj, &metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var meta storedobj.MetadataOnly
		if err := storedobj.UnmarshalStored(created.Value, &meta); err != nil || meta.Metadata.UID == "" {
			t.Fatalf("created %s: %v", created.Value, err)
		}
		objects := NewRegistryObjects(types, reg)
		if uid, err := objects.UID(t.Context(), "serviceaccounts", "default", "bot"); err != nil || uid != string(meta.Metadata.UID) {
			t.Errorf("uid %q, %v; want %q", uid, err, meta.Metadata.UID)
		}
		for _, missing := range [][2]string{{"serviceaccounts", "nobody"}, {"secrets", "bot"}, {"pods", "bot"}} {
			if _, err := objects.UID(t.Context(), missing[0], "default", missing[1]); !apierrors.IsNotFound(err) {
				t.Errorf("%s %s: %v, want NotFound", missing[0], missing[1], err)
			}
		}
	})
}

// TestRegistryPod reads a stored Pod's uid, ServiceAccount and Node, on both backends.
func TestRegistryPod(t *testing.T) {
	controllertest.Backends(t, func(t *testing.T, env *controllertest.Env) {
		pod := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
			"serviceAccountName": "bot", "nodeName": "n1",
			"containers": []any{map[string]any{"name": "c", "image": "busybox"}}}}}
		pod.SetName("p")
		created, _, err := env.Registry.Create(t.Context(), registry.Ref{Resource: env.Resource("", "pods"), Namespace: "default"}, pod, &metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var meta storedobj.MetadataOnly
		if err := storedobj.UnmarshalStored(created.Value, &meta); err != nil {
			t.Fatal(err)
		}
		got, err := NewRegistryObjects(env.Catalog, env.Registry).Pod(t.Context(), "default", "p")
		if want := (Pod{UID: string(meta.Metadata.UID), ServiceAccountName: "bot", NodeName: "n1"}); err != nil || got != want {
			t.Errorf("Pod %+v, %v; want %+v", got, err, want)
		}
		if _, err := NewRegistryObjects(env.Catalog, env.Registry).Pod(t.Context(), "default", "gone"); !apierrors.IsNotFound(err) {
			t.Errorf("a missing Pod: %v", err)
		}
	})
}
