package registry

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// patchBound is the longest a refused patch bomb may take, on a loaded test machine: kube-apiserver
// refuses these in well under a second.
const patchBound = 5 * time.Second

// doublingCopies is a JSON patch of n copy operations that each copy /data into itself, doubling
// it: n of them ask for 2^n times its size.
func doublingCopies(n int) []byte {
	ops := make([]string, n)
	for i := range ops {
		ops[i] = fmt.Sprintf(`{"op":"copy","from":"/data","path":"/data/c%d"}`, i)
	}
	return []byte("[" + strings.Join(ops, ",") + "]")
}

// patchBoundRegistry is a registry on a fresh SQLite database holding the configmap cm, whose data
// is the value of key "a".
func patchBoundRegistry(t *testing.T, value string) (*Registry, Ref, *unstructured.Unstructured) {
	t.Helper()
	namespaces, configMaps := testTypes()
	r, err := New(t.Context(), openTestStore(t, sqltest.SQLiteDSN(t)), namespaces, Options{})
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cm"}, "data": map[string]any{"a": value}}}
	stored, _, err := r.Create(t.Context(), Ref{Resource: configMaps, Namespace: "default"}, obj, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created, err := storedobj.DecodeStored(stored.Value)
	if err != nil {
		t.Fatal(err)
	}
	return r, Ref{Resource: configMaps, Namespace: "default", Name: "cm"}, created
}

// assertPatchRefused sends the patch and checks that it is refused with want, within patchBound,
// and that the stored object is still before.
func assertPatchRefused(t *testing.T, r *Registry, ref Ref, before *unstructured.Unstructured, patchType types.PatchType, body []byte, opts *metav1.PatchOptions, want *apierrors.StatusError) {
	t.Helper()
	if opts.FieldManager == "" {
		opts.FieldManager = "bomber"
	}
	start := time.Now()
	_, _, _, err := r.Patch(t.Context(), ref, patchType, body, opts)
	if took := time.Since(start); took > patchBound {
		t.Errorf("refused after %s, want within %s", took, patchBound)
	}
	if diff := cmp.Diff(want.ErrStatus, statusOf(err)); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}
	stored, err := r.store.Get(t.Context(), (&request{res: ref.Resource, namespace: ref.Namespace, name: ref.Name}).key())
	if err != nil {
		t.Fatal(err)
	}
	after, err := storedobj.DecodeStored(stored.Value)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before.Object, after.Object); diff != "" {
		t.Errorf("stored object changed (-before +after):\n%s", diff)
	}
}

// unprocessable is kube-apiserver's 422 for a JSON patch that does not apply: the library's error
// (here "Unable to complete the copy, ...") is not in it, so neither is any of the document.
var unprocessable = apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", "", 0, false)

// A JSON patch's copies may add at most 3 MiB to the document, as in kube-apiserver, which
// answers 422 with a short message, never the document. Dry-run or not, the patch stops at the
// copy that passes the limit, long before the doubling costs anything.
func TestJSONPatchCopiesBounded(t *testing.T) {
	r, ref, before := patchBoundRegistry(t, strings.Repeat("x", 200<<10))
	for _, tt := range []struct {
		name   string
		copies int
		dryRun []string
	}{
		{"100 KB of copies", 100 << 10 / len(`{"op":"copy","from":"/data","path":"/data/c1000"},`), nil},
		{"10 copies, dry-run", 10, []string{metav1.DryRunAll}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assertPatchRefused(t, r, ref, before, types.JSONPatchType, doublingCopies(tt.copies), &metav1.PatchOptions{DryRun: tt.dryRun}, unprocessable)
		})
	}
}

// Copies within the limit apply: the limit counts what copies add, not the document's size.
func TestJSONPatchCopiesWithinBound(t *testing.T) {
	r, ref, _ := patchBoundRegistry(t, "x")
	stored, _, _, err := r.Patch(t.Context(), ref, types.JSONPatchType, []byte(`[{"op":"add","path":"/data/b","value":"y"},{"op":"copy","from":"/data/b","path":"/data/c"}]`), &metav1.PatchOptions{FieldManager: "m"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := storedobj.DecodeStored(stored.Value)
	if data, _, _ := unstructured.NestedStringMap(got.Object, "data"); !cmp.Equal(data, map[string]string{"a": "x", "b": "y", "c": "y"}) {
		t.Errorf("data %v", data)
	}
}

// A JSON patch of more than 10000 operations is refused before any is applied: 413 with
// kube-apiserver's message.
func TestJSONPatchOperationsBounded(t *testing.T) {
	r, ref, before := patchBoundRegistry(t, "x")
	ops := strings.TrimSuffix(strings.Repeat(`{"op":"test","path":"/data/a","value":"x"},`, maxJSONPatchOperations+1), ",")
	want := apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, maxJSONPatchOperations+1))
	assertPatchRefused(t, r, ref, before, types.JSONPatchType, []byte("["+ops+"]"), &metav1.PatchOptions{}, want)
}

// nested is n JSON objects, each the value of "a" in the one around it, around inner.
func nested(n int, inner string) string {
	return strings.Repeat(`{"a":`, n) + inner + strings.Repeat("}", n)
}

// Merge and strategic merge patches add nothing the patch does not hold, so the body's limit bounds
// them; what could still cost is depth, which the JSON decoder refuses past 10000 levels: the
// JSON patch library's 400 for a merge patch, the strategic merge's for a strategic merge.
func TestMergePatchDepthBounded(t *testing.T) {
	r, ref, before := patchBoundRegistry(t, "x")
	tooDeep := []byte(`{"data":` + nested(10001, `"x"`) + `}`)
	t.Run("merge", func(t *testing.T) {
		assertPatchRefused(t, r, ref, before, types.MergePatchType, tooDeep, &metav1.PatchOptions{FieldValidation: metav1.FieldValidationIgnore},
			apierrors.NewBadRequest("Invalid JSON Patch"))
	})
	t.Run("strategic merge", func(t *testing.T) {
		assertPatchRefused(t, r, ref, before, types.StrategicMergePatchType, tooDeep, &metav1.PatchOptions{FieldValidation: metav1.FieldValidationIgnore},
			apierrors.NewBadRequest("invalid character '{' exceeded max depth"))
	})
}

// billionLaughs is a YAML document of 9 levels of aliases, each naming the one below 9 times:
// 9^9 strings once expanded.
func billionLaughs() []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\nl0: &l0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	for i := 1; i <= 9; i++ {
		prev := fmt.Sprintf("*l%d", i-1)
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(prev+",", 9), ","))
	}
	return []byte(b.String())
}

// An apply's YAML may not expand aliases without bound ("billion laughs"): the YAML library
// refuses excessive aliasing, which kube-apiserver answers 400.
func TestApplyAliasesBounded(t *testing.T) {
	r, ref, before := patchBoundRegistry(t, "x")
	assertPatchRefused(t, r, ref, before, types.ApplyYAMLPatchType, billionLaughs(), &metav1.PatchOptions{FieldManager: "bomber", Force: new(true)},
		apierrors.NewBadRequest("error decoding patch: error converting YAML to JSON: yaml: document contains excessive aliasing"))
}
