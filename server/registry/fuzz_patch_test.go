package registry

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/resource"
)

// fuzzPatchTypes are the patch types FuzzPatch picks from by its first argument.
var fuzzPatchTypes = []types.PatchType{types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType}

// FuzzPatch: no JSON, merge, strategic merge or apply patch that gets past the HTTP layer's syntax
// check makes applying it to a configmap panic or fail as a 500, take more than patchBound, or
// grow the object by more than the patch itself and kube-apiserver's copy limit allow. The seed
// corpus holds the bombs: doubling copies, billion laughs, deep nesting.
func FuzzPatch(f *testing.F) {
	f.Add(byte(0), []byte(`[{"op":"copy","from":"/data","path":"/data/b"}]`))
	f.Add(byte(1), []byte(`{"data":{"a":null,"b":"c"}}`))
	f.Add(byte(2), []byte(`{"metadata":{"$setElementOrder/finalizers":["a/b"],"finalizers":["a/b"]},"$retainKeys":["data"]}`))
	f.Add(byte(3), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  b: c\n"))
	configMaps := builtin.Resources(func(*resource.Resource) {}, nil)[1]
	old := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cm", "namespace": "default"}, "data": map[string]any{"a": "0123456789abcdef"}}}
	oldJSON, err := json.Marshal(old.Object)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, kind byte, body []byte) {
		patchType := fuzzPatchTypes[int(kind)%len(fuzzPatchTypes)]
		if !passesSyntaxCheck(patchType, body) {
			return
		}
		p := &patchRequest{patchType: patchType, body: body, opts: &metav1.PatchOptions{FieldManager: "fuzz"}}
		if patchType == types.ApplyYAMLPatchType {
			p.opts.Force = new(true)
		}
		req := newRequest(Ref{Resource: configMaps, Namespace: "default", Name: "cm"}, nil, p.manager(), p.opts)
		start := time.Now()
		patched, err := p.patchedObject(t.Context(), req, replaceAll, old.DeepCopy())
		if took := time.Since(start); took > patchBound {
			t.Fatalf("%s patch of %d bytes took %s", patchType, len(body), took)
		}
		if err != nil {
			if st := statusOf(err); st.Code >= http.StatusInternalServerError && !isKubes500(patchType, st) {
				t.Fatalf("%s patch %q: %d %s", patchType, body, st.Code, st.Message)
			}
			return
		}
		patchedJSON, err := json.Marshal(patched.Object)
		if err != nil {
			t.Fatal(err)
		}
		// Besides the patch's own bytes and its copies, an apply records its fields in managedFields.
		if limit := len(oldJSON) + 4*len(body) + maxJSONPatchCopyBytes + 1024; len(patchedJSON) > limit {
			t.Fatalf("%s patch of %d bytes made a %d-byte object, more than %d", patchType, len(body), len(patchedJSON), limit)
		}
	})
}

// isKubes500 tells kube-apiserver v1.37's own 500s, which sqlkube answers as kube does: for an
// apply configuration with a field its type does not declare, the field manager's "failed to
// create typed patch object" (kubernetes/kubernetes#122480, #139253, open); for a strategic merge
// patch, the library's errors kube's handler does not classify (a `$setElementOrder/` directive
// on a map, for one). Neither is a Status, so kube answers them as errors of its own, with no
// reason.
func isKubes500(patchType types.PatchType, st metav1.Status) bool {
	if st.Code != http.StatusInternalServerError || st.Reason != metav1.StatusReasonUnknown {
		return false
	}
	return patchType == types.StrategicMergePatchType || strings.HasPrefix(st.Message, "failed to create typed patch object")
}

// passesSyntaxCheck tells the bodies the HTTP layer lets through to the registry: YAML for an
// apply, JSON for the others.
func passesSyntaxCheck(patchType types.PatchType, body []byte) bool {
	if patchType == types.ApplyYAMLPatchType {
		_, err := utilyaml.ToJSON(body)
		return err == nil
	}
	return json.Valid(body)
}
