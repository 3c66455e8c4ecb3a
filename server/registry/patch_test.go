package registry_test

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sqlkube/sqlkube/server/registry"
)

// patch patches the object ref names, and returns it as stored and the patch's warnings.
func (r *testRegistry) patch(ref registry.Ref, patchType types.PatchType, body string, opts *metav1.PatchOptions) (*unstructured.Unstructured, []string, error) {
	r.t.Helper()
	if opts.FieldManager == "" {
		opts.FieldManager = fieldManager
	}
	stored, _, warnings, err := r.reg.Patch(r.t.Context(), ref, patchType, []byte(body), opts)
	if err != nil {
		return nil, warnings, err
	}
	return decode(r.t, stored), warnings, nil
}

// mustPatch is patch without options, failing the test on an error.
func (r *testRegistry) mustPatch(ref registry.Ref, patchType types.PatchType, body string) *unstructured.Unstructured {
	r.t.Helper()
	obj, _, err := r.patch(ref, patchType, body, &metav1.PatchOptions{})
	if err != nil {
		r.t.Fatalf("%s patch %s: %v", patchType, body, err)
	}
	return obj
}

// wantField fails unless obj's field at path equals want (as decoded from JSON).
func wantField(t *testing.T, obj *unstructured.Unstructured, want any, path ...string) {
	t.Helper()
	if got, _, _ := unstructured.NestedFieldNoCopy(obj.Object, path...); !reflect.DeepEqual(got, want) {
		t.Fatalf("%v = %#v, want %#v", path, got, want)
	}
}

func TestPatchConfigMap(t *testing.T) {
	onBackends(t, func(t *testing.T, r *testRegistry) {
		r.mustCreate("configmaps", "default", `{"metadata":{"name":"p"},"data":{"a":"1","b":"2"}}`)
		p := r.ref("configmaps", "default", "p")

		// A merge patch removes keys with null.
		got := r.mustPatch(p, types.MergePatchType, `{"data":{"a":null,"c":"3"}}`)
		wantField(t, got, map[string]any{"b": "2", "c": "3"}, "data")

		// A JSON patch, its test passing.
		got = r.mustPatch(p, types.JSONPatchType, `[{"op":"test","path":"/data/b","value":"2"},{"op":"add","path":"/data/d","value":"4"}]`)
		wantField(t, got, map[string]any{"b": "2", "c": "3", "d": "4"}, "data")

		got = r.mustPatch(p, types.StrategicMergePatchType, `{"metadata":{"labels":{"l":"v"}},"data":{"e":"5"}}`)
		wantField(t, got, map[string]any{"b": "2", "c": "3", "d": "4", "e": "5"}, "data")
		wantField(t, got, map[string]any{"l": "v"}, "metadata", "labels")

		// Unknown fields of the type are dropped with a warning (fieldValidation=Warn).
		warned, warnings, err := r.patch(p, types.MergePatchType, `{"foo":1}`, &metav1.PatchOptions{})
		if err != nil || !slices.Equal(warnings, []string{`unknown field "foo"`}) {
			t.Fatalf("warnings %q, %v", warnings, err)
		}
		wantField(t, warned, nil, "foo")
		if _, warnings, err := r.patch(p, types.MergePatchType, `{"foo":1}`, &metav1.PatchOptions{FieldValidation: metav1.FieldValidationIgnore}); err != nil || len(warnings) != 0 {
			t.Fatalf("warnings under Ignore: %q, %v", warnings, err)
		}

		// A patch that changes nothing writes nothing and answers the current object.
		rv := got.GetResourceVersion()
		before := r.revision()
		if same := r.mustPatch(p, types.MergePatchType, `{"data":{"e":"5"}}`); same.GetResourceVersion() != rv || r.revision() != before {
			t.Fatalf("no-op patch wrote: resourceVersion %s -> %s", rv, same.GetResourceVersion())
		}

		// A resourceVersion in the patch is a precondition.
		_, _, err = r.patch(p, types.MergePatchType, `{"metadata":{"resourceVersion":"1"},"data":{"f":"6"}}`, &metav1.PatchOptions{})
		wantStatus(t, err, metav1.Status{Status: metav1.StatusFailure, Code: http.StatusConflict, Reason: metav1.StatusReasonConflict,
			Message: `Operation cannot be fulfilled on configmaps "p": the object has been modified; please apply your changes to the latest version and try again`,
			Details: &metav1.StatusDetails{Name: "p", Kind: "configmaps"}})
		for _, tc := range []struct {
			patchType types.PatchType
			body      string
		}{
			{types.StrategicMergePatchType, `{"metadata":{"resourceVersion":"1"},"data":{"f":"6"}}`},
			{types.JSONPatchType, `[{"op":"replace","path":"/metadata/resourceVersion","value":"1"}]`},
			{types.ApplyYAMLPatchType, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p\n  resourceVersion: \"1\"\n"},
		} {
			_, _, err := r.patch(p, tc.patchType, tc.body, &metav1.PatchOptions{FieldManager: "m"})
			wantCode(t, err, http.StatusConflict)
		}
		got = r.mustPatch(p, types.MergePatchType, `{"metadata":{"resourceVersion":"`+rv+`"},"data":{"f":"6"}}`)
		wantField(t, got, "6", "data", "f")

		// A dry run answers the patched object and writes nothing.
		before = r.revision()
		dry, _, err := r.patch(p, types.MergePatchType, `{"data":{"g":"7"}}`, &metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatal(err)
		}
		wantField(t, dry, "7", "data", "g")
		if stored := r.mustGet("configmaps", "default", "p"); dataOf(stored, "g") != "" || r.revision() != before {
			t.Fatalf("dry-run patch wrote: %v", stored)
		}
	})
}

// A strategic merge patch merges a list by its merge key, as the Go type says
// (ServiceAccount.secrets by name), where a merge patch replaces it.
func TestPatchStrategicMergeList(t *testing.T) {
	r := onSQLite(t)
	r.mustCreate("serviceaccounts", "default", `{"metadata":{"name":"s"},"secrets":[{"name":"a"},{"name":"b"}]}`)
	s := r.ref("serviceaccounts", "default", "s")
	// The patch's items come first, as the strategic merge library orders them.
	got := r.mustPatch(s, types.StrategicMergePatchType, `{"secrets":[{"name":"c"}]}`)
	wantField(t, got, []any{map[string]any{"name": "c"}, map[string]any{"name": "a"}, map[string]any{"name": "b"}}, "secrets")
	got = r.mustPatch(s, types.StrategicMergePatchType, `{"secrets":[{"$patch":"delete","name":"a"}]}`)
	wantField(t, got, []any{map[string]any{"name": "c"}, map[string]any{"name": "b"}}, "secrets")
	got = r.mustPatch(s, types.MergePatchType, `{"secrets":[{"name":"d"}]}`)
	wantField(t, got, []any{map[string]any{"name": "d"}}, "secrets")
}

// Patches without a resourceVersion sent at once are each re-applied to the object a
// concurrent one wrote, so none is lost.
func TestPatchConcurrent(t *testing.T) {
	onBackends(t, func(t *testing.T, r *testRegistry) {
		r.mustCreate("configmaps", "default", `{"metadata":{"name":"c"}}`)
		c := r.ref("configmaps", "default", "c")
		const writers = 8
		errs := make(chan error, writers)
		for i := range writers {
			go func() {
				_, _, _, err := r.reg.Patch(t.Context(), c, types.MergePatchType, fmt.Appendf(nil, `{"data":{"k%d":"v"}}`, i), &metav1.PatchOptions{})
				errs <- err
			}()
		}
		for range writers {
			if err := <-errs; err != nil {
				t.Fatalf("concurrent patch: %v", err)
			}
		}
		if data, _, _ := unstructured.NestedStringMap(r.mustGet("configmaps", "default", "c").Object, "data"); len(data) != writers {
			t.Fatalf("data after %d patches: %v", writers, data)
		}
	})
}

func TestPatchImmutableMetadata(t *testing.T) {
	r := onSQLite(t)
	created := r.mustCreate("configmaps", "default", `{"metadata":{"name":"i"}}`)
	i := r.ref("configmaps", "default", "i")
	_, _, err := r.patch(i, types.MergePatchType, `{"metadata":{"uid":"other"}}`, &metav1.PatchOptions{})
	wantStatus(t, err, metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
		Message: `ConfigMap "i" is invalid: metadata.uid: Invalid value: "other": field is immutable`,
		Details: &metav1.StatusDetails{Name: "i", Kind: "ConfigMap", Causes: []metav1.StatusCause{{
			Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: "other": field is immutable`, Field: "metadata.uid"}}}})
	// creationTimestamp is kept whatever the patch says, so this patch changes nothing.
	got := r.mustPatch(i, types.MergePatchType, `{"metadata":{"creationTimestamp":"2000-01-01T00:00:00Z"}}`)
	if got.GetCreationTimestamp() != created.GetCreationTimestamp() || got.GetResourceVersion() != created.GetResourceVersion() {
		t.Fatalf("patched creationTimestamp: %v, created %v", got.Object, created.Object)
	}
}

// Removing the last finalizer of an object being deleted deletes it.
func TestPatchRemovesLastFinalizer(t *testing.T) {
	r := onSQLite(t)
	r.mustCreate("configmaps", "default", `{"metadata":{"name":"f","finalizers":["example.com/x"]}}`)
	f := r.ref("configmaps", "default", "f")
	r.mustDelete(f, &metav1.DeleteOptions{})
	got := r.mustPatch(f, types.MergePatchType, `{"metadata":{"finalizers":null}}`)
	wantField(t, got, nil, "metadata", "finalizers")
	_, err := r.get("configmaps", "default", "f")
	wantCode(t, err, http.StatusNotFound)
}
