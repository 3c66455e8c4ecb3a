package endpoints_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/crdtype"
	"github.com/sqlkube/sqlkube/server/endpoints"
	"github.com/sqlkube/sqlkube/server/internal/benchcpu"
	"github.com/sqlkube/sqlkube/server/resource"
)

// BenchmarkDecodeObject decodes the bodies of creates with 1 KiB of data: the config map the
// write benchmarks send, and a custom resource.
func BenchmarkDecodeObject(b *testing.B) {
	payload := strings.Repeat("x", 1024)
	b.Run("configmap", func(b *testing.B) {
		res := builtin.Resources(func(*resource.Resource) {}, nil)[1]
		benchmarkDecodeObject(b, res, fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1","resourceVersion":""},"data":{"payload":%q}}`, payload))
	})
	b.Run("customresource", func(b *testing.B) {
		benchmarkDecodeObject(b, widgetResource(b), fmt.Appendf(nil, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","labels":{"a":"b"}},"spec":{"color":%q,"size":3}}`, payload))
	})
}

func benchmarkDecodeObject(b *testing.B, res *resource.Resource, body []byte) {
	b.ReportAllocs()
	defer benchcpu.Report(b)()
	for b.Loop() {
		r, _ := http.NewRequest("POST", "/", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		if err := endpoints.DecodeRequestObject(r, res); err != nil {
			b.Fatal(err)
		}
	}
}

// widgetResource is the v1 Widget of widgetCRD, as the registry serves it.
func widgetResource(b *testing.B) *resource.Resource {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal([]byte(widgetCRD), &crd); err != nil {
		b.Fatal(err)
	}
	crd.Status.AcceptedNames = crd.Spec.Names
	apihelpers.SetCRDCondition(&crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue})
	return crdtype.ServedResources(&crd, nil, slog.New(slog.DiscardHandler))[0]
}
