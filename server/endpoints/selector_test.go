package endpoints_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Which objects a selector selects, and which fields a type supports, are the registry's rules,
// tested in server/registry; HTTP reads the selectors from the query and answers the ones that
// do not parse.
func TestSelectorsFromTheQuery(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", cmPath, `{"metadata":{"name":"a","labels":{"env":"prod"}}}`).expect(t, http.StatusCreated)
	api.do("POST", cmPath, `{"metadata":{"name":"b"}}`).expect(t, http.StatusCreated)
	if l := api.list(t, cmPath+"?labelSelector="+url.QueryEscape("env in (prod,dev)")); !slices.Equal(l.names(), []string{"a"}) {
		t.Fatalf("labelSelector: %v", l.names())
	}
	if l := api.list(t, "/api/v1/configmaps?fieldSelector="+url.QueryEscape("metadata.namespace=default,metadata.name!=a")); !slices.Equal(l.names(), []string{"b"}) {
		t.Fatalf("fieldSelector: %v", l.names())
	}
	bad := func(query, msg string) {
		t.Helper()
		api.do("GET", cmPath+"?"+query, "").expectStatus(t, metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest, Message: msg})
	}
	bad("labelSelector="+url.QueryEscape("env in (prod"), "unable to parse requirement: found '', expected: ',' or ')'")
	bad("fieldSelector="+url.QueryEscape("metadata.name"), "invalid selector: 'metadata.name'; can't understand 'metadata.name'")
	bad("fieldSelector="+url.QueryEscape("data.a=1"), `"data.a" is not a known field selector: only "metadata.name", "metadata.namespace"`)
}
