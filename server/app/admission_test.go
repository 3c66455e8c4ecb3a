package app

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/sqlkube/sqlkube/server/admission"
)

// kubeDefaultPlugins are kube-apiserver v1.37's default admission plugins, in its order.
var kubeDefaultPlugins = []string{"NamespaceLifecycle", "LimitRanger", "ServiceAccount", "TaintNodesByCondition", "PodSecurity",
	"Priority", "DefaultTolerationSeconds", "DefaultStorageClass", "StorageObjectInUseProtection", "PodGroupProtection",
	"PersistentVolumeClaimResize", "RuntimeClass", "CertificateApproval", "CertificateSigning", "ClusterTrustBundleAttest",
	"CertificateSubjectRestriction", "DefaultIngressClass", "PodTopologyLabels", "NodeDeclaredFeatureValidator", "PodResizeValidator",
	"MutatingAdmissionPolicy", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "ResourceQuota"}

// kube-apiserver's admission flags, from the command line or the environment, give its chain.
func TestParseAdmissionPlugins(t *testing.T) {
	for _, tt := range []struct {
		name      string
		args, env []string
		want      []string
	}{
		{"defaults", nil, nil, kubeDefaultPlugins},
		{"enabled and disabled", []string{"--enable-admission-plugins=NodeRestriction,AlwaysPullImages", "--disable-admission-plugins=PodSecurity,ResourceQuota"}, nil,
			withPlugins(kubeDefaultPlugins, map[string]string{"ServiceAccount": "NodeRestriction", "TaintNodesByCondition": "AlwaysPullImages"}, "PodSecurity", "ResourceQuota")},
		{"from the environment", nil, []string{"SQLKUBE_ENABLE_ADMISSION_PLUGINS=EventRateLimit"},
			withPlugins(kubeDefaultPlugins, map[string]string{"DefaultTolerationSeconds": "EventRateLimit"})},
		{"the deprecated --admission-control: exactly those", []string{"--admission-control=ResourceQuota,NamespaceExists,AlwaysAdmit"}, nil,
			[]string{"AlwaysAdmit", "NamespaceExists", "ResourceQuota"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse(tt.args, tt.env, &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			if got := admission.EnabledPlugins(cfg.Admission.Plugins); !slices.Equal(got, tt.want) {
				t.Errorf("plugins\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

// withPlugins is plugins with each added after the one it is keyed by, less removed.
func withPlugins(plugins []string, added map[string]string, removed ...string) []string {
	var out []string
	for _, p := range plugins {
		if !slices.Contains(removed, p) {
			out = append(out, p)
		}
		if a, ok := added[p]; ok {
			out = append(out, a)
		}
	}
	return out
}

// The admission flags are refused as kube-apiserver refuses them, in its words; the
// configuration file is read when the chain is built.
func TestParseAdmissionRefusals(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--enable-admission-plugins=Foo"}, `enable-admission-plugins plugin "Foo" is unknown`},
		{[]string{"--disable-admission-plugins=NamespaceLifecycle,Bar"}, `disable-admission-plugins plugin "Bar" is unknown`},
		{[]string{"--enable-admission-plugins=PodNodeSelector", "--disable-admission-plugins=PodNodeSelector"},
			`[PodNodeSelector] in enable-admission-plugins and disable-admission-plugins overlapped`},
		{[]string{"--admission-control=ResourceQuota", "--enable-admission-plugins=AlwaysPullImages"},
			`admission-control and enable-admission-plugins/disable-admission-plugins flags are mutually exclusive`},
		{[]string{"--webhook-service-resolver=default/svc=nowhere"}, `--webhook-service-resolver: default/svc=nowhere is not NAMESPACE/NAME=HOST:PORT`},
	} {
		_, err := Parse(tt.args, nil, &bytes.Buffer{})
		if err == nil || err.Error() != tt.want {
			t.Errorf("%v: err %v, want %s", tt.args, err, tt.want)
		}
	}
	cfg, err := Parse([]string{"--admission-control-config-file=/etc/admission.yaml"}, nil, &bytes.Buffer{})
	if err != nil || cfg.Admission.Plugins.GenericAdmission.ConfigFile != "/etc/admission.yaml" {
		t.Errorf("--admission-control-config-file: %v, %+v", err, cfg.Admission.Plugins.GenericAdmission)
	}
}

// --help lists kube's admission flags, with kube's words.
func TestServeUsageListsAdmissionFlags(t *testing.T) {
	var help bytes.Buffer
	if _, err := Parse([]string{"--help"}, nil, &help); err == nil {
		t.Fatal("--help: no ErrHelp")
	}
	for _, want := range []string{"--enable-admission-plugins", "admission plugins that should be enabled in addition to default enabled ones (NamespaceLifecycle, LimitRanger,",
		"--disable-admission-plugins", "--admission-control-config-file", "File with admission control configuration."} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("--help does not say %q", want)
		}
	}
}
