package endpoints_test

import (
	"net/http"
	"testing"

	"github.com/sqlkube/sqlkube/server/controllers/controllertest"
	"github.com/sqlkube/sqlkube/server/endpoints"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What a dry run answers and that it writes nothing are the registry's rules, tested in
// server/registry; HTTP reads dryRun from the query, and answers a value it does not support.
func TestDryRunParameter(t *testing.T) {
	api := sqliteAPI(t)
	before, _ := api.store.CurrentRevision(t.Context())
	api.do("POST", cmPath+"?dryRun=All", `{"metadata":{"name":"d"}}`).expect(t, http.StatusCreated)
	if after, _ := api.store.CurrentRevision(t.Context()); after != before {
		t.Fatalf("revisions %d..%d: a dry run wrote", before, after)
	}
	api.do("POST", cmPath+"?dryRun=Some", `{"metadata":{"name":"e"}}`).expectStatus(t, metav1.Status{Code: 422, Reason: metav1.StatusReasonInvalid,
		Message: `CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Some"]: supported values: "All"`,
		Details: &metav1.StatusDetails{Group: "meta.k8s.io", Kind: "CreateOptions", Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueNotSupported,
			Message: `Unsupported value: ["Some"]: supported values: "All"`, Field: "dryRun"}}}})
}

// What a get's resourceVersion reads is the registry's rule, tested in server/registry; HTTP
// reads it from the query and tells a client to retry a 504.
func TestGetResourceVersionHTTP(t *testing.T) {
	api := sqliteAPI(t)
	obj := api.do("POST", cmPath, `{"metadata":{"name":"g"}}`).expect(t, http.StatusCreated).object(t)
	api.do("GET", cmPath+"/g?resourceVersion="+str(obj, "metadata", "resourceVersion"), "").expect(t, http.StatusOK)
	resp := api.do("GET", cmPath+"/g?resourceVersion=999999", "").expect(t, http.StatusGatewayTimeout)
	if resp.header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q", resp.header.Get("Retry-After"))
	}
	api.do("GET", cmPath+"/g?resourceVersion=x", "").expect(t, http.StatusBadRequest)
}

func TestHealthAndRecovery(t *testing.T) {
	api := sqliteAPI(t)
	controllertest.Eventually(t, "ready", func() bool { return api.do("GET", "/readyz", "").code == http.StatusOK })
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		if resp := api.do("GET", path, "").expect(t, http.StatusOK); string(resp.body) != "ok" {
			t.Fatalf("%s: %q", path, resp.body)
		}
	}
	endpoints.ServeWithRecovery(api.server, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	api.do("GET", "/anything", "").expectStatus(t, metav1.Status{Code: 500, Reason: metav1.StatusReasonInternalError,
		Message: "Internal error occurred: " + endpoints.ErrPanicked.Error(), Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Message: endpoints.ErrPanicked.Error()}}}})
	_ = api.store.Close()
	endpoints.ServeRoutesOnly(api.server)
	resp := api.do("GET", "/readyz", "").expect(t, http.StatusInternalServerError)
	if len(resp.body) == 0 {
		t.Fatal("readyz failed without a reason")
	}
}
