package server

import (
	"net/http"
	"net/url"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLabelSelectors(t *testing.T) {
	api := sqliteAPI(t)
	for _, body := range []string{
		`{"metadata":{"name":"a","labels":{"env":"prod","tier":"web"}}}`,
		`{"metadata":{"name":"b","labels":{"env":"dev","tier":"web"}}}`,
		`{"metadata":{"name":"c","labels":{"env":"test"}}}`,
		`{"metadata":{"name":"d"}}`,
	} {
		api.do("POST", cmPath, body).expect(t, http.StatusCreated)
	}
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
			l := api.list(t, cmPath+"?labelSelector="+url.QueryEscape(tt.selector))
			if !slices.Equal(l.names(), tt.want) {
				t.Fatalf("got %v, want %v", l.names(), tt.want)
			}
		})
	}
	// The limit counts selected objects; no remainingItemCount with a selector.
	l := api.list(t, cmPath+"?limit=1&labelSelector=tier%3Dweb")
	if !slices.Equal(l.names(), []string{"a"}) || l.Metadata.Continue == "" || l.Metadata.RemainingItemCount != nil {
		t.Fatalf("limited selection: %v continue %q remaining %v", l.names(), l.Metadata.Continue, l.Metadata.RemainingItemCount)
	}
	next := api.list(t, cmPath+"?limit=1&labelSelector=tier%3Dweb&continue="+url.QueryEscape(l.Metadata.Continue))
	if !slices.Equal(next.names(), []string{"b"}) {
		t.Fatalf("second page %v", next.names())
	}
	api.do("GET", cmPath+"?labelSelector="+url.QueryEscape("env in (prod"), "").expectStatus(t, metav1.Status{
		Code: 400, Reason: metav1.StatusReasonBadRequest, Message: "unable to parse requirement: found '', expected: ',' or ')'"})
}

func TestFieldSelectors(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"other"}}`).expect(t, http.StatusCreated)
	api.do("POST", cmPath, `{"metadata":{"name":"a"}}`).expect(t, http.StatusCreated)
	api.do("POST", "/api/v1/namespaces/other/configmaps", `{"metadata":{"name":"a"}}`).expect(t, http.StatusCreated)
	api.do("POST", "/api/v1/namespaces/other/configmaps", `{"metadata":{"name":"b"}}`).expect(t, http.StatusCreated)
	api.do("POST", "/api/v1/namespaces/default/secrets", `{"metadata":{"name":"s1"},"type":"Opaque"}`).expect(t, http.StatusCreated)
	api.do("POST", "/api/v1/namespaces/default/secrets", `{"metadata":{"name":"s2"},"type":"kubernetes.io/tls","data":{"tls.crt":"","tls.key":""}}`).expect(t, http.StatusCreated)
	api.do("POST", "/api/v1/namespaces/default/events", `{"metadata":{"name":"e1"},"involvedObject":{"kind":"Pod","name":"p","namespace":"default","uid":"u1","apiVersion":"v1","resourceVersion":"7","fieldPath":"spec"},"reason":"Started","reportingComponent":"kubelet","source":{"component":"kubelet"},"type":"Normal"}`).expect(t, http.StatusCreated)
	api.do("POST", "/api/v1/namespaces/default/events", `{"metadata":{"name":"e2"},"involvedObject":{"kind":"Node","name":"n"},"reason":"Other","type":"Warning"}`).expect(t, http.StatusCreated)

	tests := []struct {
		path, selector string
		want           []string
	}{
		{"/api/v1/configmaps", "metadata.name=a", []string{"a", "a"}},
		{"/api/v1/configmaps", "metadata.namespace=other", []string{"a", "b"}},
		{"/api/v1/configmaps", "metadata.namespace!=other", []string{"a"}},
		{"/api/v1/configmaps", "metadata.namespace=other,metadata.name!=a", []string{"b"}},
		{"/api/v1/configmaps", "metadata.namespace==default", []string{"a"}},
		{"/api/v1/namespaces/default/secrets", "type=kubernetes.io/tls", []string{"s2"}},
		{"/api/v1/namespaces/default/secrets", "type!=kubernetes.io/tls", []string{"s1"}},
		{"/api/v1/namespaces", "status.phase=Active", []string{"default", "kube-node-lease", "kube-public", "kube-system", "other"}},
		{"/api/v1/namespaces", "status.phase=Terminating", nil},
		{"/api/v1/namespaces/default/events", "involvedObject.kind=Pod", []string{"e1"}},
		{"/api/v1/namespaces/default/events", "involvedObject.namespace=default", []string{"e1"}},
		{"/api/v1/namespaces/default/events", "involvedObject.name=n", []string{"e2"}},
		{"/api/v1/namespaces/default/events", "involvedObject.uid=u1", []string{"e1"}},
		{"/api/v1/namespaces/default/events", "involvedObject.apiVersion=v1", []string{"e1"}},
		{"/api/v1/namespaces/default/events", "involvedObject.resourceVersion=7", []string{"e1"}},
		{"/api/v1/namespaces/default/events", "involvedObject.fieldPath=spec", []string{"e1"}},
		{"/api/v1/namespaces/default/events", "reason=Other", []string{"e2"}},
		{"/api/v1/namespaces/default/events", "reportingComponent=kubelet", []string{"e1"}},
		{"/api/v1/namespaces/default/events", "source=kubelet", []string{"e1"}},
		{"/api/v1/namespaces/default/events", "type=Warning", []string{"e2"}},
		{"/api/v1/namespaces/default/events", "type=Warning,reason=Started", nil},
	}
	for _, tt := range tests {
		t.Run(tt.path+"?"+tt.selector, func(t *testing.T) {
			l := api.list(t, tt.path+"?fieldSelector="+url.QueryEscape(tt.selector))
			if !slices.Equal(l.names(), tt.want) {
				t.Fatalf("got %v, want %v", l.names(), tt.want)
			}
		})
	}

	bad := func(path, selector, msg string) {
		t.Helper()
		api.do("GET", path+"?fieldSelector="+url.QueryEscape(selector), "").expectStatus(t, metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest, Message: msg})
	}
	bad(cmPath, "data.a=1", `"data.a" is not a known field selector: only "metadata.name", "metadata.namespace"`)
	bad("/api/v1/namespaces/default/secrets", "data.a=1", "field label not supported: data.a")
	bad(cmPath, "metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'")
	bad("/api/v1/namespaces", "metadata.namespace=x", "field label not supported: metadata.namespace")
}
