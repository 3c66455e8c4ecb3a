package e2e

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// rootCAConfigMap is the ConfigMap the server keeps in every namespace, as kube-controller-
// manager's root CA publisher does; the tests that count a client's own configmaps leave it out.
const rootCAConfigMap = "kube-root-ca.crt"

// serverOwned reports whether obj is one the server keeps in every namespace by itself: the
// root CA ConfigMap or the default ServiceAccount.
func serverOwned(obj runtime.Object) bool {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		return o.Name == rootCAConfigMap
	case *corev1.ServiceAccount:
		return o.Name == "default"
	}
	return false
}

// clientNames are the names of a list's items that a client wrote, in list order.
func clientNames(t *testing.T, list runtime.Object) []string {
	t.Helper()
	return namesWhere(t, list, func(item runtime.Object) bool { return !serverOwned(item) })
}

// namesWhere are the names of a list's items that keep accepts, in list order.
func namesWhere(t *testing.T, list runtime.Object, keep func(runtime.Object) bool) []string {
	t.Helper()
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, item := range items {
		if !keep(item) {
			continue
		}
		m, err := meta.Accessor(item)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m.GetName())
	}
	return out
}
