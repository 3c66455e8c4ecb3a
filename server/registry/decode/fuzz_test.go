package decode

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/resource"
)

var fuzzConfigMaps = &resource.Resource{Version: "v1", Name: "configmaps", Kind: "ConfigMap", ListKind: "ConfigMapList", Namespaced: true, StorageName: "configmaps", StorageVersion: "v1"}

// FuzzDecodeObject: no body makes decoding, type checks or validation panic, and whatever decodes
// has typed metadata accessors that work: decoded as a built-in's body (through its Go type), or
// parsed as a custom resource's and delete options' bodies are.
func FuzzDecodeObject(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"a":"b"}}}`), false)
	f.Add([]byte(`{"metadata":{"name":7}}`), false)
	f.Add([]byte(`{"metadata":"x"}`), false)
	f.Add([]byte(`{"kind":1}`), false)
	f.Add([]byte(`{"data":{"a":"1","a":2},"data":{"b":"2"}}`), false)
	f.Add([]byte(`[]`), false)
	f.Add([]byte(`null`), false)
	f.Add([]byte("metadata:\n  name: y\n"), true)
	f.Add([]byte("- a\n- b\n"), true)
	builtinConfigMaps := builtin.Resources(func(*resource.Resource) {}, nil)[1]
	f.Fuzz(func(t *testing.T, body []byte, isYAML bool) {
		if obj, _, err := builtinBody(builtinConfigMaps, body, isYAML); err == nil {
			useDecoded(builtinConfigMaps, obj)
		}
		obj, err := ParseObject(body, isYAML, "ConfigMap")
		if err != nil {
			return
		}
		if CheckTypeMeta(obj, fuzzConfigMaps) != nil {
			return
		}
		useDecoded(fuzzConfigMaps, obj)
	})
}

func useDecoded(res *resource.Resource, obj *unstructured.Unstructured) {
	if res.Strategy != nil {
		_ = res.Strategy.Validate(context.Background(), obj)
	} else {
		_ = resource.ValidateMetadata(res, obj, nil)
	}
	_, _, _ = obj.GetName(), obj.GetLabels(), obj.GetFinalizers()
}
