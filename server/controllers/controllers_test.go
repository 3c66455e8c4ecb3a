package controllers_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/controllers"
	"github.com/sqlkube/sqlkube/server/controllers/controllertest"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// ToUnstructured gives a typed object the served type's apiVersion and kind, whatever its own
// type meta says, in the form the registry writes: the registry stores it as the typed object.
func TestToUnstructured(t *testing.T) {
	env := controllertest.New(t, sqltest.SQLiteDSN(t))
	configMaps := env.Resource("", "configmaps")
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "wrong/v9", Kind: "Wrong"},
		ObjectMeta: metav1.ObjectMeta{Name: "typed", Labels: map[string]string{"a": "b"}}, Data: map[string]string{"k": "v"}}
	u, err := controllers.ToUnstructured(cm, configMaps)
	if err != nil {
		t.Fatal(err)
	}
	if u.GetAPIVersion() != "v1" || u.GetKind() != "ConfigMap" || u.GetName() != "typed" || u.GetLabels()["a"] != "b" {
		t.Fatalf("converted: %v", u.Object)
	}
	stored, _, err := env.Registry.Create(t.Context(), env.Ref("", "configmaps", "default", ""), u, &metav1.CreateOptions{FieldManager: controllers.FieldManager})
	if err != nil {
		t.Fatal(err)
	}
	created := controllertest.Decode(t, stored)
	if data, _, _ := unstructured.NestedString(created.Object, "data", "k"); data != "v" || len(created.GetManagedFields()) != 1 || created.GetManagedFields()[0].Manager != "kube-controller-manager" {
		t.Fatalf("stored: %v", created.Object)
	}
}
