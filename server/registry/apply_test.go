package registry_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sqlkube/sqlkube/server/registry"
)

func applyConfigMap(data string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n" + data
}

// apply applies config to the object ref names as manager.
func (r *testRegistry) apply(ref registry.Ref, manager, config string, opts metav1.PatchOptions) (obj *unstructured.Unstructured, created bool, err error) {
	r.t.Helper()
	opts.FieldManager = manager
	stored, created, _, err := r.reg.Patch(r.t.Context(), ref, types.ApplyYAMLPatchType, []byte(config), &opts)
	if err != nil {
		return nil, false, err
	}
	return decode(r.t, stored), created, nil
}

// managedFieldsOf are an object's managedFields without their times, which it checks are set.
func managedFieldsOf(t *testing.T, obj *unstructured.Unstructured) []any {
	t.Helper()
	entries, _, _ := unstructured.NestedSlice(obj.Object, "metadata", "managedFields")
	for _, e := range entries {
		entry := e.(map[string]any)
		if entry["time"] == nil {
			t.Fatalf("managedFields entry without a time: %v", entry)
		}
		delete(entry, "time")
	}
	return entries
}

func wantManagedFields(t *testing.T, obj *unstructured.Unstructured, want []any) {
	t.Helper()
	if got := managedFieldsOf(t, obj); !reflect.DeepEqual(got, want) {
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(want)
		t.Fatalf("managedFields\n got %s\nwant %s", gotJSON, wantJSON)
	}
}

func managedEntry(manager, operation string, fields map[string]any) map[string]any {
	return map[string]any{"manager": manager, "operation": operation, "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": fields}
}

func TestApply(t *testing.T) {
	onBackends(t, func(t *testing.T, r *testRegistry) {
		a := r.ref("configmaps", "default", "a")
		// Apply creates the object.
		got, created, err := r.apply(a, "alice", applyConfigMap("  one: \"1\"\n"), metav1.PatchOptions{})
		if err != nil || !created {
			t.Fatalf("apply creating: created %v, %v", created, err)
		}
		wantField(t, got, map[string]any{"one": "1"}, "data")
		wantManagedFields(t, got, []any{managedEntry("alice", "Apply", map[string]any{"f:data": map[string]any{"f:one": map[string]any{}}})})

		// The same manager changes its fields; a field it no longer applies is removed.
		got, _, err = r.apply(a, "alice", applyConfigMap("  two: \"2\"\n"), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantField(t, got, map[string]any{"two": "2"}, "data")

		// Applying the same configuration again writes nothing.
		before := r.revision()
		again, _, err := r.apply(a, "alice", applyConfigMap("  two: \"2\"\n"), metav1.PatchOptions{})
		if err != nil || again.GetResourceVersion() != got.GetResourceVersion() || r.revision() != before {
			t.Fatalf("a repeated apply wrote: %v, %v", again, err)
		}

		// Another manager setting alice's field differently conflicts, and changes nothing.
		_, _, err = r.apply(a, "bob", applyConfigMap("  two: \"3\"\n"), metav1.PatchOptions{})
		wantStatus(t, err, metav1.Status{Status: metav1.StatusFailure, Code: http.StatusConflict, Reason: metav1.StatusReasonConflict,
			Message: `Apply failed with 1 conflict: conflict with "alice": .data.two`,
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "alice"`, Field: ".data.two"}}}})
		if r.revision() != before {
			t.Fatal("a conflicting apply wrote")
		}

		// Forced, bob takes the field over.
		force := true
		got, _, err = r.apply(a, "bob", applyConfigMap("  two: \"3\"\n"), metav1.PatchOptions{Force: &force})
		if err != nil {
			t.Fatal(err)
		}
		wantField(t, got, "3", "data", "two")
		bobs := managedEntry("bob", "Apply", map[string]any{"f:data": map[string]any{"f:two": map[string]any{}}})
		wantManagedFields(t, got, []any{bobs})

		// An update records its manager next to the appliers.
		got, _, err = r.patch(a, types.MergePatchType, `{"data":{"three":"4"}}`, &metav1.PatchOptions{FieldManager: "kubectl"})
		if err != nil {
			t.Fatal(err)
		}
		wantManagedFields(t, got, []any{bobs, managedEntry("kubectl", "Update", map[string]any{"f:data": map[string]any{"f:three": map[string]any{}}})})

		// A dry-run apply writes nothing.
		b := r.ref("configmaps", "default", "b")
		if _, created, err := r.apply(b, "alice", strings.Replace(applyConfigMap("  one: \"1\"\n"), "name: a", "name: b", 1), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); err != nil || !created {
			t.Fatalf("dry-run apply: created %v, %v", created, err)
		}
		_, err = r.get("configmaps", "default", "b")
		wantCode(t, err, http.StatusNotFound)
	})
}

// Applies racing to create one object all succeed, one creating it and the others applying to
// what it created.
func TestApplyConcurrentCreate(t *testing.T) {
	onBackends(t, func(t *testing.T, r *testRegistry) {
		const appliers = 6
		a := r.ref("configmaps", "default", "a")
		type result struct {
			created bool
			err     error
		}
		results := make(chan result, appliers)
		for i := range appliers {
			go func() {
				config := applyConfigMap(fmt.Sprintf("  key%d: \"v\"\n", i))
				_, created, _, err := r.reg.Patch(t.Context(), a, types.ApplyYAMLPatchType, []byte(config), &metav1.PatchOptions{FieldManager: fmt.Sprintf("m%d", i)})
				results <- result{created, err}
			}()
		}
		created := 0
		for range appliers {
			res := <-results
			if res.err != nil {
				t.Fatalf("concurrent apply: %v", res.err)
			}
			if res.created {
				created++
			}
		}
		got := r.mustGet("configmaps", "default", "a")
		if data, _, _ := unstructured.NestedStringMap(got.Object, "data"); created != 1 || len(data) != appliers || len(managedFieldsOf(t, got)) != appliers {
			t.Fatalf("%d creates, object %v", created, got)
		}
	})
}

// A create and an update record what their managers wrote; the system fields a create wipes are
// nobody's.
func TestManagedFieldsOfWrites(t *testing.T) {
	r := onSQLite(t)
	configMaps := r.ref("configmaps", "default", "")
	stored, _, err := r.reg.Create(t.Context(), configMaps, typed(t, configMaps, `{"metadata":{"name":"m","labels":{"l":"1"}},"data":{"a":"1"}}`), &metav1.CreateOptions{FieldManager: "creator"})
	if err != nil {
		t.Fatal(err)
	}
	creators := managedEntry("creator", "Update", map[string]any{
		"f:data":     map[string]any{".": map[string]any{}, "f:a": map[string]any{}},
		"f:metadata": map[string]any{"f:labels": map[string]any{".": map[string]any{}, "f:l": map[string]any{}}},
	})
	wantManagedFields(t, decode(t, stored), []any{creators})
	m := r.ref("configmaps", "default", "m")
	stored, _, err = r.reg.Update(t.Context(), m, typed(t, m, `{"metadata":{"name":"m","labels":{"l":"1"}},"data":{"a":"1","b":"2"}}`), &metav1.UpdateOptions{FieldManager: "updater"})
	if err != nil {
		t.Fatal(err)
	}
	wantManagedFields(t, decode(t, stored), []any{creators, managedEntry("updater", "Update", map[string]any{"f:data": map[string]any{"f:b": map[string]any{}}})})

	stored, _, err = r.reg.Create(t.Context(), configMaps, typed(t, configMaps, `{"metadata":{"name":"sys","deletionTimestamp":"2020-01-01T00:00:00Z","deletionGracePeriodSeconds":5},"data":{"a":"1"}}`),
		&metav1.CreateOptions{FieldManager: "creator"})
	if err != nil {
		t.Fatal(err)
	}
	wantManagedFields(t, decode(t, stored), []any{managedEntry("creator", "Update", map[string]any{
		"f:data": map[string]any{".": map[string]any{}, "f:a": map[string]any{}},
	})})
}
