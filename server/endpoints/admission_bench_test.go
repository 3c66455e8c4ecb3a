package endpoints_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sqlkube/sqlkube/server/admission/admissiontest"
	"github.com/sqlkube/sqlkube/server/controllers/controllertest"
	"github.com/sqlkube/sqlkube/server/internal/benchcpu"
)

// BenchmarkCreateAdmission creates 1 KiB config maps from 64 concurrent clients (as
// BenchmarkWrite) and from one, with no admission configuration, with a
// ValidatingAdmissionPolicy matching every create, and with a validating webhook (HTTPS, in this
// process) matching every create. cpu-µs/op counts the webhook's side too; the one client's
// ns/op is a create's latency, of which the webhook's round trip is the difference.
func BenchmarkCreateAdmission(b *testing.B) {
	b.Run("none", func(b *testing.B) { benchmarkCreates(b, sqliteAPI(b)) })
	b.Run("policy", func(b *testing.B) {
		api := sqliteAPI(b)
		api.do("POST", policiesPath, admissiontest.DenyingPolicy).expect(b, http.StatusCreated)
		api.do("POST", bindingsPath, admissiontest.Binding("no-forbidden-binding", "no-forbidden", `["Deny"]`)).expect(b, http.StatusCreated)
		waitForDenial(b, api)
		benchmarkCreates(b, api)
	})
	b.Run("webhook", func(b *testing.B) {
		api := sqliteAPI(b)
		hook := httptest.NewTLSServer(http.HandlerFunc(admissiontest.DenyForbiddenKey))
		b.Cleanup(hook.Close)
		api.do("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", `{"metadata":{"name":"w"},"webhooks":[{
			"name":"deny.example.com","clientConfig":{"url":"`+hook.URL+`","caBundle":`+admissiontest.CABundle(hook)+`},"sideEffects":"None","admissionReviewVersions":["v1"],
			"rules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]}]}`).expect(b, http.StatusCreated)
		waitForDenial(b, api)
		benchmarkCreates(b, api)
	})
}

func benchmarkCreates(b *testing.B, api *testAPI) {
	payload := strings.Repeat("x", 1024)
	var seq atomic.Int64
	create := func(b *testing.B) {
		body := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c%d"},"data":{"payload":%q}}`, seq.Add(1), payload)
		benchSend(b, "POST", api.http.URL+cmPath, body, http.StatusCreated)
	}
	b.Run("64-clients", func(b *testing.B) {
		b.ReportAllocs()
		defer benchcpu.Report(b)()
		b.SetParallelism(32) // 64 clients on 2 cores
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				create(b)
			}
		})
	})
	b.Run("1-client", func(b *testing.B) {
		defer benchcpu.Report(b)()
		for range b.N {
			create(b)
		}
	})
}

// waitForDenial waits until the admission configuration just written is in force.
func waitForDenial(b *testing.B, api *testAPI) {
	bad := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad"},"data":{"forbidden":"x"}}`
	controllertest.Eventually(b, "the configuration denies", func() bool {
		return api.do("POST", cmPath+"?dryRun=All", bad).code >= 400
	})
}
