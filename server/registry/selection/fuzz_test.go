package selection

import (
	"net/url"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sqlkube/sqlkube/sqlstore"
)

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
		sel, err := New(configMaps, opts, nil)
		if err != nil {
			return
		}
		matches := sel.Filter()
		for _, value := range []string{`{"metadata":{"name":"x","namespace":"y","labels":{"env":"a"}}}`, `{"metadata":7}`} {
			matches(sqlstore.Object{Value: []byte(value)})
			sel.Matches(Decode(configMaps, []byte(value)))
		}
	})
}
