package registry_test

import (
	"net/http"
	"regexp"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Dry runs answer what the write would store and write nothing.
func TestDryRun(t *testing.T) {
	r := onSQLite(t)
	before := r.revision()
	dryRun := []string{metav1.DryRunAll}
	configMaps, d := r.ref("configmaps", "default", ""), r.ref("configmaps", "default", "d")
	stored, _, err := r.reg.Create(t.Context(), configMaps, typed(t, configMaps, `{"metadata":{"name":"d"},"data":{"a":"1"}}`), &metav1.CreateOptions{DryRun: dryRun})
	if err != nil {
		t.Fatal(err)
	}
	if dry := decode(t, stored); dry.GetUID() == "" || dry.GetResourceVersion() != "" || dataOf(dry, "a") != "1" {
		t.Fatalf("dry-run create: %v", dry)
	}
	_, err = r.get("configmaps", "default", "d")
	wantCode(t, err, http.StatusNotFound)

	created := r.mustCreate("configmaps", "default", `{"metadata":{"name":"d"},"data":{"a":"1"}}`)
	_, _, err = r.reg.Create(t.Context(), configMaps, typed(t, configMaps, `{"metadata":{"name":"d"}}`), &metav1.CreateOptions{DryRun: dryRun})
	wantCode(t, err, http.StatusConflict)
	stored, _, err = r.reg.Update(t.Context(), d, typed(t, d, `{"metadata":{"name":"d"},"data":{"a":"2"}}`), &metav1.UpdateOptions{DryRun: dryRun})
	if updated := decode(t, stored); err != nil || dataOf(updated, "a") != "2" || updated.GetResourceVersion() != created.GetResourceVersion() {
		t.Fatalf("dry-run update: %v, %v", updated, err)
	}
	if _, _, err := r.reg.Delete(t.Context(), d, &metav1.DeleteOptions{DryRun: dryRun}); err != nil {
		t.Fatal(err)
	}
	if stored := r.mustGet("configmaps", "default", "d"); dataOf(stored, "a") != "1" {
		t.Fatalf("dry runs changed the object: %v", stored)
	}
	if after := r.revision(); after != before+1 {
		t.Fatalf("revisions %d..%d: dry runs wrote", before, after)
	}
}

func TestGenerateName(t *testing.T) {
	r := onSQLite(t)
	obj := r.mustCreate("configmaps", "default", `{"metadata":{"generateName":"gen-"}}`)
	if name := obj.GetName(); !regexp.MustCompile(`^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$`).MatchString(name) {
		t.Fatalf("generated name %q", name)
	}
}

func dataOf(obj *unstructured.Unstructured, key string) string {
	value, _, _ := unstructured.NestedString(obj.Object, "data", key)
	return value
}
