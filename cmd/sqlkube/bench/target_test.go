package bench

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// TestBodyTemplateMatchesEncodingJSON checks the spliced bodies byte for byte against what
// encoding/json makes of the same object, including strings it escapes.
func TestBodyTemplateMatchesEncodingJSON(t *testing.T) {
	type object struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name            string            `json:"name"`
			Namespace       string            `json:"namespace"`
			Labels          map[string]string `json:"labels"`
			ResourceVersion string            `json:"resourceVersion,omitempty"`
		} `json:"metadata"`
		Data map[string]string `json:"data,omitempty"`
		Spec map[string]string `json:"spec,omitempty"`
	}
	for _, tc := range []struct {
		ref             resourceRef
		kind, namespace string
		name, rv        string
		seq             int
	}{
		{resourceRef{Version: "v1", Resource: "configmaps"}, "ConfigMap", "bench", "bench-0a1b2c3d-7-12", "", 0},
		{resourceRef{Version: "v1", Resource: "configmaps"}, "ConfigMap", "bench", "bench-0a1b2c3d-obj-3", "123456", 42},
		{resourceRef{Group: "bench.sqlkube.io", Version: "v1", Resource: "widgets"}, "Widget", "ns", "w", "7", -1},
		{resourceRef{Version: "v1", Resource: "pods"}, "Pod", "a\"b\\c<d>&é\x01", "n\u2028", "rv\"", 3},
	} {
		tgt := newTarget(tc.ref, tc.kind, tc.namespace, "0a1b2c3d", 100)
		var want object
		want.APIVersion, want.Kind = tc.ref.Version, tc.kind
		if tc.ref.Group != "" {
			want.APIVersion = tc.ref.Group + "/" + tc.ref.Version
		}
		want.Metadata.Name, want.Metadata.Namespace, want.Metadata.ResourceVersion = tc.name, tc.namespace, tc.rv
		want.Metadata.Labels = map[string]string{runLabel: "0a1b2c3d"}
		content := map[string]string{"payload": strings.Repeat("x", 100), "seq": strconv.Itoa(tc.seq)}
		if tc.kind == "ConfigMap" {
			want.Data = content
		} else {
			want.Spec = content
		}
		wantJSON, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if got := tgt.body.render(tc.name, tc.rv, tc.seq); string(got) != string(wantJSON) {
			t.Errorf("got  %s\nwant %s", got, wantJSON)
		}
	}
}
