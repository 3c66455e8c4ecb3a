package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestMetrics: /metrics serves kube-apiserver's request metrics with kube's labels, counting
// exactly the requests made, and sqlkube's own; system:monitoring may read it, anonymous users
// may not.
func TestMetrics(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		ctx := context.Background()
		admin := kubernetes.NewForConfigOrDie(s.restConfig())
		creates := func() float64 {
			return metricValue(t, scrape(t, admin), "apiserver_request_total", map[string]string{
				"verb": "POST", "group": "", "version": "v1", "resource": "configmaps", "scope": "resource", "code": "201", "component": "apiserver"})
		}
		before := creates()
		for i := range 5 {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("m%d", i)}}
			if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if got := creates() - before; got != 5 {
			t.Errorf("apiserver_request_total for ConfigMap creates grew by %v, want 5", got)
		}
		list, err := admin.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		families := scrape(t, admin)
		for _, name := range []string{"apiserver_request_duration_seconds", "apiserver_response_sizes", "apiserver_storage_objects",
			"sqlkube_commit_batch_size", "sqlkube_commit_duration_seconds",
			"sqlkube_watch_feed_lag_seconds", "sqlkube_current_revision", "sqlkube_compacted_revision", "sqlkube_watch_window_events",
			"sqlkube_db_connections", "go_goroutines", "process_resident_memory_bytes"} {
			if _, ok := families[name]; !ok {
				t.Errorf("/metrics has no %s", name)
			}
		}
		listed, _ := strconv.ParseFloat(list.ResourceVersion, 64)
		if current := metricValue(t, families, "sqlkube_current_revision", nil); current < listed {
			t.Errorf("sqlkube_current_revision %v, but a list read revision %s", current, list.ResourceVersion)
		}

		if code := get(t, s.anonymousClient(t), s.URL()+"/metrics").code; code != http.StatusForbidden {
			t.Errorf("anonymous /metrics: %d, want 403", code)
		}
		bindGroup(t, admin, "monitors", "system:monitoring")
		monitor := kubernetes.NewForConfigOrDie(s.userConfig(t, "prometheus", "monitors"))
		eventually(t, requestTimeout, "system:monitoring reads /metrics", func() (bool, error) {
			_, err := monitor.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
			return err == nil, err
		})
	})
}

// scrape reads /metrics as client's user.
func scrape(t *testing.T, client kubernetes.Interface) map[string]*dto.MetricFamily {
	t.Helper()
	body, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics is not Prometheus text: %v", err)
	}
	return families
}

// metricValue is the value of the first series of name that has labels (a counter or gauge), 0 if
// there is none.
func metricValue(t *testing.T, families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	for _, m := range families[name].GetMetric() {
		if !hasLabels(m, labels) {
			continue
		}
		if c := m.GetCounter(); c != nil {
			return c.GetValue()
		}
		return m.GetGauge().GetValue()
	}
	return 0
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
