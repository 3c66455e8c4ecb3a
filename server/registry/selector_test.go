package registry_test

import (
	"net/http"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// list lists ref's collection with opts, and returns the names listed and the list's metadata.
func (r *testRegistry) list(ref registry.Ref, opts *internalversion.ListOptions) ([]string, metav1.ListMeta, error) {
	r.t.Helper()
	var names []string
	meta, err := r.reg.List(r.t.Context(), ref, opts, func(o sqlstore.Object) error {
		names = append(names, o.Key.Name)
		return nil
	})
	return names, meta, err
}

func TestLabelSelectors(t *testing.T) {
	r := onSQLite(t)
	for _, doc := range []string{
		`{"metadata":{"name":"a","labels":{"env":"prod","tier":"web"}}}`,
		`{"metadata":{"name":"b","labels":{"env":"dev","tier":"web"}}}`,
		`{"metadata":{"name":"c","labels":{"env":"test"}}}`,
		`{"metadata":{"name":"d"}}`,
	} {
		r.mustCreate("configmaps", "default", doc)
	}
	configMaps := r.ref("configmaps", "default", "")
	tests := []struct {
		selector string
		want     []string
	}{
		{"env=prod", []string{"a"}},
		{"env==prod", []string{"a"}},
		{"env!=prod", []string{"b", "c", "d"}},
		{"env in (prod,dev)", []string{"a", "b"}},
		{"env notin (prod,dev)", []string{"c", "d"}},
		{"tier", []string{"a", "b"}},
		{"!tier", []string{"c", "d"}},
		{"tier=web,env!=dev", []string{"a"}},
		{"", []string{"a", "b", "c", "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.selector, func(t *testing.T) {
			selector, err := labels.Parse(tt.selector)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := r.list(configMaps, &internalversion.ListOptions{LabelSelector: selector})
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	// The limit counts selected objects; no remainingItemCount with a selector.
	web := labels.SelectorFromSet(labels.Set{"tier": "web"})
	first, meta, err := r.list(configMaps, &internalversion.ListOptions{LabelSelector: web, Limit: 1})
	if err != nil || !slices.Equal(first, []string{"a"}) || meta.Continue == "" || meta.RemainingItemCount != nil {
		t.Fatalf("limited selection: %v continue %q remaining %v, %v", first, meta.Continue, meta.RemainingItemCount, err)
	}
	next, _, err := r.list(configMaps, &internalversion.ListOptions{LabelSelector: web, Limit: 1, Continue: meta.Continue})
	if err != nil || !slices.Equal(next, []string{"b"}) {
		t.Fatalf("second page %v, %v", next, err)
	}
}

func TestFieldSelectors(t *testing.T) {
	r := onSQLite(t)
	r.mustCreate("namespaces", "", `{"metadata":{"name":"other"}}`)
	r.mustCreate("configmaps", "default", `{"metadata":{"name":"a"}}`)
	r.mustCreate("configmaps", "other", `{"metadata":{"name":"a"}}`)
	r.mustCreate("configmaps", "other", `{"metadata":{"name":"b"}}`)
	r.mustCreate("secrets", "default", `{"metadata":{"name":"s1"},"type":"Opaque"}`)
	r.mustCreate("secrets", "default", `{"metadata":{"name":"s2"},"type":"kubernetes.io/tls","data":{"tls.crt":"","tls.key":""}}`)
	r.mustCreate("events", "default", `{"metadata":{"name":"e1"},"involvedObject":{"kind":"Pod","name":"p","namespace":"default","uid":"u1","apiVersion":"v1","resourceVersion":"7","fieldPath":"spec"},"reason":"Started","reportingComponent":"kubelet","source":{"component":"kubelet"},"type":"Normal"}`)
	r.mustCreate("events", "default", `{"metadata":{"name":"e2"},"involvedObject":{"kind":"Node","name":"n"},"reason":"Other","type":"Warning"}`)

	allConfigMaps, secrets, namespaces, events := r.ref("configmaps", "", ""), r.ref("secrets", "default", ""), r.ref("namespaces", "", ""), r.ref("events", "default", "")
	tests := []struct {
		ref      registry.Ref
		selector string
		want     []string
	}{
		{allConfigMaps, "metadata.name=a", []string{"a", "a"}},
		{allConfigMaps, "metadata.namespace=other", []string{"a", "b"}},
		{allConfigMaps, "metadata.namespace!=other", []string{"a"}},
		{allConfigMaps, "metadata.namespace=other,metadata.name!=a", []string{"b"}},
		{allConfigMaps, "metadata.namespace==default", []string{"a"}},
		{secrets, "type=kubernetes.io/tls", []string{"s2"}},
		{secrets, "type!=kubernetes.io/tls", []string{"s1"}},
		{namespaces, "status.phase=Active", []string{"default", "kube-node-lease", "kube-public", "kube-system", "other"}},
		{namespaces, "status.phase=Terminating", nil},
		{events, "involvedObject.kind=Pod", []string{"e1"}},
		{events, "involvedObject.namespace=default", []string{"e1"}},
		{events, "involvedObject.name=n", []string{"e2"}},
		{events, "involvedObject.uid=u1", []string{"e1"}},
		{events, "involvedObject.apiVersion=v1", []string{"e1"}},
		{events, "involvedObject.resourceVersion=7", []string{"e1"}},
		{events, "involvedObject.fieldPath=spec", []string{"e1"}},
		{events, "reason=Other", []string{"e2"}},
		{events, "reportingComponent=kubelet", []string{"e1"}},
		{events, "source=kubelet", []string{"e1"}},
		{events, "type=Warning", []string{"e2"}},
		{events, "type=Warning,reason=Started", nil},
	}
	for _, tt := range tests {
		t.Run(tt.ref.Resource.Name+"?"+tt.selector, func(t *testing.T) {
			got, _, err := r.list(tt.ref, &internalversion.ListOptions{FieldSelector: fields.ParseSelectorOrDie(tt.selector)})
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}

	bad := func(ref registry.Ref, selector, msg string) {
		t.Helper()
		_, _, err := r.list(ref, &internalversion.ListOptions{FieldSelector: fields.ParseSelectorOrDie(selector)})
		wantStatus(t, err, metav1.Status{Status: metav1.StatusFailure, Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest, Message: msg})
	}
	bad(r.ref("configmaps", "default", ""), "data.a=1", `"data.a" is not a known field selector: only "metadata.name", "metadata.namespace"`)
	bad(secrets, "data.a=1", "field label not supported: data.a")
	bad(namespaces, "metadata.namespace=x", "field label not supported: metadata.namespace")
}
