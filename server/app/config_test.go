package app

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/server/endpoints/filters"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sqlkube/sqlkube/server/controllers"
)

// ignoreAdmission leaves the admission options, kube's, to admission_test.go.
var ignoreAdmission = cmpopts.IgnoreFields(Config{}, "Admission")

func TestParseServeDefaults(t *testing.T) {
	cfg, err := Parse(nil, nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Listen:                "127.0.0.1:8080",
		DSN:                   "sqlite://./sqlkube.db",
		LogLevel:              slog.LevelInfo,
		Retention:             5 * time.Minute,
		RetentionMinRevisions: 1000,
		WatchBookmarkInterval: time.Minute,
		Audit:                 kubeAuditDefaults,
		Security: securityConfig{
			CertDir:            "sqlkube-pki",
			AdminKubeconfig:    "sqlkube.kubeconfig",
			TLSMinVersion:      "VersionTLS12",
			AnonymousAuth:      true,
			AuthorizationModes: []string{"RBAC"},
			SAIssuer:           "https://kubernetes.default.svc.cluster.local",
			SASigningKeyFile:   "sqlkube-pki/sa.key",
		},
		Operations: operationsConfig{
			Limits: filters.Limits{MaxRequestsInFlight: 400, MaxMutatingRequestsInFlight: 200, PriorityAndFairness: true,
				RequestTimeout: time.Minute, MinRequestTimeout: 30 * time.Minute},
			RequestLogLevel: slog.LevelDebug,
			Profiling:       true,
		},
		Services: servicesConfig{NodePortRange: "30000-32767", EndpointReconcilerType: "lease"}, Controllers: controllers.Selection{"*"},
		KubeAPIServer: kubeAPIServerDefaults,
	}
	if diff := cmp.Diff(want, cfg, ignoreAdmission); diff != "" {
		t.Fatalf("defaults (-want +got):\n%s", diff)
	}
}

func TestParseServeEnvironmentAndFlags(t *testing.T) {
	env := []string{
		"SQLKUBE_LISTEN=0.0.0.0:9000",
		"SQLKUBE_DB=postgres://postgres@db:5432/kube",
		"SQLKUBE_LOG_LEVEL=debug",
		"SQLKUBE_DB_MAX_CONNS=7",
		"SQLKUBE_RETENTION=10m",
		"SQLKUBE_RETENTION_MIN_REVISIONS=50",
		"SQLKUBE_COMPACTION_INTERVAL=30s",
		"SQLKUBE_WATCH_BOOKMARK_INTERVAL=5s",
		"SQLKUBE_CERT_DIR=/pki",
		"SQLKUBE_AUTHORIZATION_MODE=RBAC,AlwaysDeny",
		"SQLKUBE_MAX_REQUESTS_INFLIGHT=10",
		"SQLKUBE_ENABLE_PRIORITY_AND_FAIRNESS=false",
		"SQLKUBE_MIN_REQUEST_TIMEOUT=60",
		"SQLKUBE_REQUEST_LOG_LEVEL=info",
		"SQLKUBE_SERVICE_CLUSTER_IP_RANGE=10.96.0.0/12",
		"UNRELATED=x",
	}
	cfg, err := Parse([]string{"--listen", "127.0.0.1:9001", "--log-level=warn"}, env, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Listen:                "127.0.0.1:9001", // the command line wins over the environment
		DSN:                   "postgres://postgres@db:5432/kube",
		LogLevel:              slog.LevelWarn,
		DBMaxConns:            7,
		Retention:             10 * time.Minute,
		RetentionMinRevisions: 50,
		CompactionInterval:    30 * time.Second,
		WatchBookmarkInterval: 5 * time.Second,
		Audit:                 kubeAuditDefaults,
		Security: securityConfig{
			CertDir:            "/pki",
			AdminKubeconfig:    "/pki/admin.kubeconfig", // PostgreSQL has no database file to sit beside
			TLSMinVersion:      "VersionTLS12",
			AnonymousAuth:      true,
			AuthorizationModes: []string{"RBAC", "AlwaysDeny"},
			SAIssuer:           "https://kubernetes.default.svc.cluster.local",
			SASigningKeyFile:   "/pki/sa.key",
		},
		Operations: operationsConfig{
			Limits: filters.Limits{MaxRequestsInFlight: 10, MaxMutatingRequestsInFlight: 200,
				RequestTimeout: time.Minute, MinRequestTimeout: time.Minute},
			RequestLogLevel: slog.LevelInfo,
			Profiling:       true,
		},
		Services: servicesConfig{ClusterIPRange: "10.96.0.0/12", NodePortRange: "30000-32767", EndpointReconcilerType: "lease"}, Controllers: controllers.Selection{"*"},
		KubeAPIServer: kubeAPIServerDefaults,
	}
	if diff := cmp.Diff(want, cfg, ignoreAdmission); diff != "" {
		t.Fatalf("config (-want +got):\n%s", diff)
	}
}

func TestParseServeRejectsBadInput(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     []string
		wantErr string
	}{
		{"bad env value", nil, []string{"SQLKUBE_RETENTION=soon"}, `invalid value "soon" for SQLKUBE_RETENTION`},
		{"bad log level", []string{"--log-level=loud"}, nil, `unknown log level "loud"`},
		{"unknown flag", []string{"--nope"}, nil, "unknown flag: --nope"},
		{"stray argument", []string{"--listen=:1", "extra"}, nil, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.args, tt.env, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestEnvName(t *testing.T) {
	if got := EnvName("watch-bookmark-interval"); got != "SQLKUBE_WATCH_BOOKMARK_INTERVAL" {
		t.Fatalf("EnvName = %q", got)
	}
}

// TestServicesOptions: kube's service flags become the services' options; a bad range is
// refused naming its flag.
func TestServicesOptions(t *testing.T) {
	listen := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6443}
	opts, err := servicesConfig{ClusterIPRange: "10.96.0.0/12,fd00::/108", NodePortRange: "31000-31010",
		AdvertiseAddress: "192.0.2.7"}.options(listen, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if len(opts.ClusterIPRanges) != 2 || opts.ClusterIPRanges[0].String() != "10.96.0.0/12" || opts.ClusterIPRanges[1].String() != "fd00::/108" ||
		opts.NodePortRange.String() != "31000-31010" || opts.AdvertiseAddress.String() != "192.0.2.7" || opts.Port != 6443 {
		t.Errorf("options %+v", opts)
	}
	for _, bad := range []struct {
		cfg  servicesConfig
		want string
	}{
		{servicesConfig{ClusterIPRange: "10.0.0.0", NodePortRange: "30000-32767"}, "--service-cluster-ip-range"},
		{servicesConfig{ClusterIPRange: "10.0.0.0/24,10.1.0.0/24", NodePortRange: "30000-32767"}, "two of different IP families"},
		{servicesConfig{NodePortRange: "many"}, "--service-node-port-range"},
		{servicesConfig{NodePortRange: "30000-32767", AdvertiseAddress: "host"}, "--advertise-address"},
		{servicesConfig{NodePortRange: "30000-32767", EndpointReconcilerType: "master-count"}, `--endpoint-reconciler-type: "master-count" is not supported`},
	} {
		if _, err := bad.cfg.options(listen, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: err %v, want it to name %q", bad.cfg, err, bad.want)
		}
	}
}
