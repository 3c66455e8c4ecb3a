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
