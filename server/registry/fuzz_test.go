package registry

import (
	"context"
	"net/url"
	"testing"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	builtinConfigMaps := builtin.Resources(func(*resource.Resource) {})[1]
	f.Fuzz(func(t *testing.T, body []byte, isYAML bool) {
		if obj, _, err := decodeBuiltin(builtinConfigMaps, body, isYAML); err == nil {
			useDecoded(builtinConfigMaps, obj)
		}
		obj, err := ParseObject(body, isYAML, "ConfigMap")
		if err != nil {
			return
		}
		if checkTypeMeta(obj, fuzzConfigMaps) != nil {
			return
		}
		useDecoded(fuzzConfigMaps, obj)
	})
}

func useDecoded(res *resource.Resource, obj *unstructured.Unstructured) {
	if res.Strategy != nil {
		_ = validateCreate(context.Background(), res, obj)
	} else {
		_ = resource.ValidateMetadata(res, obj, nil)
	}
	_, _, _ = obj.GetName(), obj.GetLabels(), obj.GetFinalizers()
}

// FuzzContinueToken: any token either is rejected or names a key of its own list, and
// re-encodes to a token that decodes the same.
func FuzzContinueToken(f *testing.F) {
	scope := listScope{resource: "configmaps", namespace: "default", namespaced: true}
	f.Add(encodeContinue(scope, continuePoint{revision: 5, after: sqlstore.Key{Namespace: "default", Name: "a"}}))
	f.Add(encodeContinue(scope, continuePoint{revision: 5, after: sqlstore.Key{Namespace: "default", Name: "a"}, remaining: 9}))
	f.Add(encodeContinue(scope, continuePoint{revision: latestRevision, after: sqlstore.Key{Namespace: "default", Name: "b"}}))
	f.Add("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MCwic3RhcnQiOiJ4In0")
	f.Add("")
	f.Add("!!!")
	f.Fuzz(func(t *testing.T, token string) {
		at, err := decodeContinue(token, scope)
		if err != nil {
			return
		}
		if at.after.Namespace != scope.namespace || at.after.Name == "" || at.revision == 0 || at.revision < latestRevision || at.remaining < 0 {
			t.Fatalf("accepted token %q gave %+v", token, at)
		}
		again, err := decodeContinue(encodeContinue(scope, at), scope)
		if err != nil || again != at {
			t.Fatalf("round trip of %q: %+v %v", token, again, err)
		}
	})
}

// FuzzSelectors: no label or field selector makes parsing or matching panic.
func FuzzSelectors(f *testing.F) {
	f.Add("env in (a,b),!tier", "metadata.name=x")
	f.Add("a=b,c!=d", "metadata.namespace!=x,metadata.name==y")
	f.Add("x notin ()", "type=")
	f.Add("(", "=")
	f.Add("a,,", "a=b=c")
	f.Fuzz(func(t *testing.T, labelSelector, fieldSelector string) {
		q := url.Values{"labelSelector": {labelSelector}, "fieldSelector": {fieldSelector}}
		opts := &internalversion.ListOptions{}
		if metainternalversionscheme.ParameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, opts) != nil {
			return
		}
		sel, err := newSelection(fuzzConfigMaps, opts)
		if err != nil {
			return
		}
		matches := sel.filter()
		matches(sqlstore.Object{Value: []byte(`{"metadata":{"name":"x","namespace":"y","labels":{"env":"a"}}}`)})
		matches(sqlstore.Object{Value: []byte(`{"metadata":7}`)})
	})
}
