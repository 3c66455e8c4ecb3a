package registry

import (
	"net/url"
	"testing"

	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var fuzzConfigMaps = &resource.Resource{Version: "v1", Name: "configmaps", Kind: "ConfigMap", ListKind: "ConfigMapList", Namespaced: true, StorageName: "configmaps", StorageVersion: "v1"}

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
