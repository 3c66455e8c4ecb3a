package admission

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/registry"
)

// storageClassCRD stands for storage.k8s.io's StorageClasses, which another package serves:
// the plugins read whatever is stored under storageclasses.storage.k8s.io.
const storageClassCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"storageclasses.storage.k8s.io","annotations":{"api-approved.kubernetes.io":"https://github.com/kubernetes/kubernetes/pull/1"}},
"spec":{"group":"storage.k8s.io","scope":"Cluster",
 "names":{"plural":"storageclasses","singular":"storageclass","kind":"StorageClass","listKind":"StorageClassList"},
 "versions":[{"name":"v1","served":true,"storage":true,
   "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`

func claim(name, class, size string) string {
	classField := ""
	if class != "" {
		classField = `"storageClassName":"` + class + `",`
	}
	return `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"` + name + `"},"spec":{` + classField +
		`"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"` + size + `"}}}}`
}

// A new node gets the not-ready taint (TaintNodesByCondition), volumes and claims their
// protection finalizers (StorageObjectInUseProtection); with no StorageClass served, a claim
// keeps no class (DefaultStorageClass).
func TestKubePluginsMutateNodesVolumesAndClaims(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	node := h.store(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"spec":{"taints":[{"key":"k","value":"v","effect":"NoExecute"}]}}`)
	taints, _, _ := unstructured.NestedSlice(node.Object, "spec", "taints")
	if len(taints) != 2 || taints[1].(map[string]any)["key"] != "node.kubernetes.io/not-ready" || taints[1].(map[string]any)["effect"] != "NoSchedule" {
		t.Errorf("node's taints: %v", taints)
	}
	pv := h.store(`{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv1"},"spec":{"capacity":{"storage":"1Gi"},
		"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/data"}}}`)
	if f := pv.GetFinalizers(); len(f) != 1 || f[0] != "kubernetes.io/pv-protection" {
		t.Errorf("volume's finalizers: %v", f)
	}
	pvc := h.store(claim("data", "", "1Gi"))
	if f := pvc.GetFinalizers(); len(f) != 1 || f[0] != "kubernetes.io/pvc-protection" {
		t.Errorf("claim's finalizers: %v", f)
	}
	if class, found, _ := unstructured.NestedString(pvc.Object, "spec", "storageClassName"); found {
		t.Errorf("claim's class with no StorageClass stored: %q", class)
	}
}

// DefaultStorageClass and PersistentVolumeClaimResize read the StorageClasses stored.
func TestKubePluginsReadStorageClasses(t *testing.T) {
	h := newHarness(t, harnessConfig{crds: []string{storageClassCRD}})
	h.store(`{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"fixed","annotations":{"storageclass.kubernetes.io/is-default-class":"true"}},"provisioner":"p"}`)
	h.store(`{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"expandable"},"provisioner":"p","allowVolumeExpansion":true}`)
	defaulted := h.store(claim("defaulted", "", "1Gi"))
	if class, _, _ := unstructured.NestedString(defaulted.Object, "spec", "storageClassName"); class != "fixed" {
		t.Errorf("claim's class: %q, want the default class", class)
	}

	claims := h.resource("", "v1", "persistentvolumeclaims")
	grow := func(name string) error {
		ctx := asAdmin(t.Context())
		ref := registry.Ref{Resource: claims, Namespace: "default", Name: name}
		stored, err := h.registry.Get(ctx, ref, &metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		obj := decodeStored(t, claims, stored)
		if err := unstructured.SetNestedField(obj.Object, "Bound", "status", "phase"); err != nil {
			t.Fatal(err)
		}
		ref.Subresource = "status"
		if _, _, err := h.registry.Update(ctx, ref, obj, &metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		ref.Subresource = ""
		if err := unstructured.SetNestedField(obj.Object, "2Gi", "spec", "resources", "requests", "storage"); err != nil {
			t.Fatal(err)
		}
		obj.SetResourceVersion("")
		_, _, err = h.registry.Update(ctx, ref, obj, &metav1.UpdateOptions{})
		return err
	}
	if err := grow("defaulted"); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(),
		"only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize") {
		t.Errorf("growing a claim whose class does not allow it: %v", err)
	}
	h.store(claim("growing", "expandable", "1Gi"))
	if err := grow("growing"); err != nil {
		t.Errorf("growing a claim whose class allows it: %v", err)
	}
}

// LimitRanger refuses a claim beyond the namespace's LimitRanges, read through the registry.
func TestKubePluginsReadLimitRanges(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.store(`{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"storage"},"spec":{"limits":[{"type":"PersistentVolumeClaim","max":{"storage":"1Gi"}}]}}`)
	_, err := h.createAs(asAdmin(t.Context()), h.resource("", "v1", "persistentvolumeclaims"), claim("big", "", "2Gi"), false)
	want := `persistentvolumeclaims "big" is forbidden: maximum storage usage per PersistentVolumeClaim is 1Gi, but request is 2Gi`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("a claim beyond the limit: %v, want %s", err, want)
	}
	h.store(claim("small", "", "1Gi"))
}
