package endpoints_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit/policy"

	"github.com/sqlkube/sqlkube/server/apiserver"
	"github.com/sqlkube/sqlkube/server/auditlog"
	"github.com/sqlkube/sqlkube/server/endpoints"
	"github.com/sqlkube/sqlkube/server/internal/benchcpu"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// BenchmarkAuditedCreate is BenchmarkWrite's create on SQLite without audit and with every
// request audited at level, into a JSON log file as --audit-log-path writes it (server/auditlog).
func BenchmarkAuditedCreate(b *testing.B) {
	b.Run("off", func(b *testing.B) { benchmarkCreate(b, auditlog.Config{}) })
	for _, level := range []auditinternal.Level{auditinternal.LevelMetadata, auditinternal.LevelRequestResponse} {
		b.Run(string(level), func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "audit.log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			evaluator := policy.NewPolicyRuleEvaluator(&auditinternal.Policy{Rules: []auditinternal.PolicyRule{{Level: level}}})
			benchmarkCreate(b, auditlog.Config{Policy: evaluator, Backend: auditlog.NewBackend(f)})
		})
	}
}

func benchmarkCreate(b *testing.B, audit auditlog.Config) {
	api := newTestAPI(b, sqltest.SQLiteDSN(b), apiserver.Options{Options: endpoints.Options{Audit: audit}})
	payload := strings.Repeat("x", 1024)
	var seq atomic.Int64
	b.ReportAllocs()
	defer benchcpu.Report(b)()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			body := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c%d"},"data":{"payload":%q}}`, seq.Add(1), payload)
			benchSend(b, "POST", api.http.URL+cmPath, body, http.StatusCreated)
		}
	})
}
