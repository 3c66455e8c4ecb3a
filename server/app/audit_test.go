package app

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"
	"k8s.io/apimachinery/pkg/types"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// kubeAuditDefaults are kube-apiserver's defaults for the audit flags sqlkube has.
var kubeAuditDefaults = auditConfig{
	LogMaxAge:             366,
	LogMaxBackups:         100,
	LogMaxSize:            100,
	LogFormat:             "json",
	LogMode:               "blocking",
	LogBatchMaxSize:       1,
	WebhookInitialBackoff: 10 * time.Second,
	WebhookMode:           "batch",
	WebhookBatchMaxSize:   400,
	WebhookBatchMaxWait:   30 * time.Second,
}

const metadataPolicy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"

func parseAudit(t *testing.T, args ...string) auditConfig {
	t.Helper()
	cfg, err := Parse(args, nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Audit
}

func TestAuditFlagsRefused(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--audit-log-mode", "eventually"}, `--audit-log-mode "eventually" is not one of batch, blocking, blocking-strict`},
		{[]string{"--audit-webhook-mode", "never"}, `--audit-webhook-mode "never" is not one of`},
		{[]string{"--audit-log-format", "xml"}, `--audit-log-format "xml" is not one of legacy, json`},
		{[]string{"--audit-log-maxsize", "-1"}, `--audit-log-maxsize -1 can't be a negative number`},
		{[]string{"--audit-webhook-batch-max-size", "0"}, `--audit-webhook-batch-max-size 0 must be a positive number`},
		{[]string{"--audit-policy-file", policy, "--audit-log-path", "-"}, `loading audit policy file`},
		{[]string{"--audit-policy-file", filepath.Join(t.TempDir(), "missing.yaml")}, `loading audit policy file`},
	} {
		_, err := parseAudit(t, tc.args...).audit()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestAuditNeedsPolicyAndBackend: as in kube-apiserver, a policy without a backend, or a backend
// without a policy, records nothing.
func TestAuditNeedsPolicyAndBackend(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte(metadataPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--audit-policy-file", policy}, {"--audit-log-path", "-"}} {
		a, err := parseAudit(t, args...).audit()
		if err != nil || a.Policy != nil || a.Backend != nil {
			t.Errorf("%v: %+v, %v; want no audit", args, a, err)
		}
	}
	a, err := parseAudit(t, "--audit-policy-file", policy, "--audit-log-path", "-").audit()
	if err != nil || a.Policy == nil || a.Backend == nil {
		t.Errorf("policy and log: %+v, %v; want both", a, err)
	}
}

// TestAuditLogWriter: the log file is created private, in a new directory if need be, and
// rotated by lumberjack with the flags' limits unless --audit-log-maxsize is 0.
func TestAuditLogWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "audit.log")
	w, err := parseAudit(t, "--audit-log-path", path, "--audit-log-maxsize", "5", "--audit-log-maxbackup", "3", "--audit-log-maxage", "7").logWriter()
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := w.(*lumberjack.Logger); !ok || l.MaxSize != 5 || l.MaxBackups != 3 || l.MaxAge != 7 || l.Filename != path {
		t.Errorf("writer %#v, want lumberjack with the flags' limits", w)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("log file: %v, %v; want mode 0600", info, err)
	}
	w, err = parseAudit(t, "--audit-log-path", path, "--audit-log-maxsize", "1").logWriter()
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(strings.Repeat("x", 1023) + "\n")
	for range 1100 { // 1.1 MB: past --audit-log-maxsize 1
		if _, err := w.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	w.(*lumberjack.Logger).Close()
	if files, _ := os.ReadDir(filepath.Dir(path)); len(files) != 2 {
		t.Errorf("after 1.1 MB at --audit-log-maxsize 1: %d files, want the log and one rotated file", len(files))
	}
	w, err = parseAudit(t, "--audit-log-path", path, "--audit-log-maxsize", "0").logWriter()
	if f, ok := w.(*os.File); !ok || err != nil {
		t.Errorf("--audit-log-maxsize 0: %#v, %v; want the plain file", w, err)
	} else {
		f.Close()
	}
}

// TestAuditLogBatches: in batch mode every event reaches the log, in order, by Shutdown.
func TestAuditLogBatches(t *testing.T) {
	dir := t.TempDir()
	policy, path := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte(metadataPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := parseAudit(t, "--audit-policy-file", policy, "--audit-log-path", path, "--audit-log-mode", "batch",
		"--audit-log-batch-max-size", "2", "--audit-log-batch-max-wait", "10ms").audit()
	if err != nil {
		t.Fatal(err)
	}
	stop := runAuditBackend(a.Backend)
	for _, id := range []string{"a", "b", "c"} {
		if !a.Backend.ProcessEvents(&auditinternal.Event{AuditID: types.UID(id), Stage: auditinternal.StageResponseComplete}) {
			t.Fatalf("event %s refused", id)
		}
	}
	stop()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev auditv1.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		ids = append(ids, string(ev.AuditID))
	}
	if !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Errorf("logged %v, want a, b, c", ids)
	}
}
