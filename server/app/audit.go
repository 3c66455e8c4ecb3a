package app

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"gopkg.in/natefinch/lumberjack.v2"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/util/webhook"
	pluginbuffered "k8s.io/apiserver/plugin/pkg/audit/buffered"
	pluginlog "k8s.io/apiserver/plugin/pkg/audit/log"
	pluginwebhook "k8s.io/apiserver/plugin/pkg/audit/webhook"

	"github.com/sqlkube/sqlkube/server/auditlog"
)

// auditConfig is kube-apiserver's audit flags (a subset: batch buffer sizes and throttling,
// truncation and event versions other than audit.k8s.io/v1 are left out).
type auditConfig struct {
	PolicyFile            string
	LogPath               string
	LogMaxAge             int
	LogMaxBackups         int
	LogMaxSize            int
	LogCompress           bool
	LogFormat             string
	LogMode               string
	LogBatchMaxSize       int
	LogBatchMaxWait       time.Duration
	WebhookConfigFile     string
	WebhookInitialBackoff time.Duration
	WebhookMode           string
	WebhookBatchMaxSize   int
	WebhookBatchMaxWait   time.Duration
}

// The modes of an audit backend, as kube-apiserver names them: batch buffers events and sends them
// in the background; blocking sends each event before the request goes on, ignoring failures;
// blocking-strict fails a request whose RequestReceived event could not be sent.
const (
	auditModeBatch          = "batch"
	auditModeBlocking       = "blocking"
	auditModeBlockingStrict = "blocking-strict"
)

var auditModes = []string{auditModeBatch, auditModeBlocking, auditModeBlockingStrict}

func addAuditFlags(fs *pflag.FlagSet, c *auditConfig) {
	fs.StringVar(&c.PolicyFile, "audit-policy-file", "",
		"audit policy (audit.k8s.io/v1 Policy) saying which requests are recorded at which level; without it nothing is recorded")
	fs.StringVar(&c.LogPath, "audit-log-path", "",
		"file the audit events are appended to, one audit.k8s.io/v1 Event per line; \"-\" is standard output")
	fs.IntVar(&c.LogMaxAge, "audit-log-maxage", 366,
		"days to keep rotated audit log files, by the timestamp in their names; 0 keeps them whatever their age")
	fs.IntVar(&c.LogMaxBackups, "audit-log-maxbackup", 100,
		"most rotated audit log files kept; 0 keeps them all")
	fs.IntVar(&c.LogMaxSize, "audit-log-maxsize", 100,
		"size in megabytes at which the audit log is rotated; 0 never rotates it")
	fs.BoolVar(&c.LogCompress, "audit-log-compress", false, "gzip rotated audit log files")
	fs.StringVar(&c.LogFormat, "audit-log-format", pluginlog.FormatJson,
		"format of the audit log: json (one Event per line) or legacy (one line of text per event)")
	fs.StringVar(&c.LogMode, "audit-log-mode", auditModeBlocking,
		"how events are written to the audit log: "+strings.Join(auditModes, ", "))
	fs.IntVar(&c.LogBatchMaxSize, "audit-log-batch-max-size", 1,
		"most events written to the audit log at once (batch mode); a batch is one write to the file")
	fs.DurationVar(&c.LogBatchMaxWait, "audit-log-batch-max-wait", 0,
		"longest an event waits for its batch to fill before the batch is written (batch mode)")
	fs.StringVar(&c.WebhookConfigFile, "audit-webhook-config-file", "",
		"kubeconfig file naming the server that receives audit events, in batches (audit.k8s.io/v1 EventList)")
	fs.DurationVar(&c.WebhookInitialBackoff, "audit-webhook-initial-backoff", pluginwebhook.DefaultInitialBackoffDelay,
		"wait before the first retry of a failed webhook request")
	fs.StringVar(&c.WebhookMode, "audit-webhook-mode", auditModeBatch,
		"how events are sent to the webhook: "+strings.Join(auditModes, ", "))
	fs.IntVar(&c.WebhookBatchMaxSize, "audit-webhook-batch-max-size", 400, "most events in one webhook batch (batch mode)")
	fs.DurationVar(&c.WebhookBatchMaxWait, "audit-webhook-batch-max-wait", 30*time.Second,
		"longest an event waits for its batch to fill before the batch is sent (batch mode)")
}

// audit builds the audit policy and backends. As in kube-apiserver, without a policy or without
// a backend nothing is recorded. The backend must be Run before serving and Shut down after.
func (c auditConfig) audit() (auditlog.Config, error) {
	if err := c.validate(); err != nil || c.PolicyFile == "" {
		return auditlog.Config{}, err
	}
	p, err := policy.LoadPolicyFromFile(c.PolicyFile)
	if err != nil {
		return auditlog.Config{}, fmt.Errorf("loading audit policy file: %w", err)
	}
	var backends []audit.Backend
	if c.LogPath != "" {
		w, err := c.logWriter()
		if err != nil {
			return auditlog.Config{}, fmt.Errorf("audit log: %w", err)
		}
		backends = append(backends, c.logBackend(w))
	}
	if c.WebhookConfigFile != "" {
		hook, err := pluginwebhook.NewBackend(c.WebhookConfigFile, auditv1.SchemeGroupVersion,
			webhook.DefaultRetryBackoffWithInitialDelay(c.WebhookInitialBackoff), nil)
		if err != nil {
			return auditlog.Config{}, fmt.Errorf("initializing audit webhook: %w", err)
		}
		if c.WebhookMode == auditModeBatch {
			hook = pluginbuffered.NewBackend(hook, c.webhookBatchConfig())
		}
		backends = append(backends, unbatched(c.WebhookMode, hook))
	}
	if len(backends) == 0 {
		return auditlog.Config{}, nil
	}
	return auditlog.Config{Policy: policy.NewPolicyRuleEvaluator(p), Backend: audit.Union(backends...)}, nil
}

func (c auditConfig) validate() error {
	var errs []error
	for flag, mode := range map[string]string{"--audit-log-mode": c.LogMode, "--audit-webhook-mode": c.WebhookMode} {
		if !slices.Contains(auditModes, mode) {
			errs = append(errs, fmt.Errorf("%s %q is not one of %s", flag, mode, strings.Join(auditModes, ", ")))
		}
	}
	if !slices.Contains(pluginlog.AllowedFormats, c.LogFormat) {
		errs = append(errs, fmt.Errorf("--audit-log-format %q is not one of %s", c.LogFormat, strings.Join(pluginlog.AllowedFormats, ", ")))
	}
	for flag, n := range map[string]int{"--audit-log-maxage": c.LogMaxAge, "--audit-log-maxbackup": c.LogMaxBackups,
		"--audit-log-maxsize": c.LogMaxSize} {
		if n < 0 {
			errs = append(errs, fmt.Errorf("%s %d can't be a negative number", flag, n))
		}
	}
	if c.LogBatchMaxSize <= 0 {
		errs = append(errs, fmt.Errorf("--audit-log-batch-max-size %d must be a positive number", c.LogBatchMaxSize))
	}
	if c.WebhookBatchMaxSize <= 0 {
		errs = append(errs, fmt.Errorf("--audit-webhook-batch-max-size %d must be a positive number", c.WebhookBatchMaxSize))
	}
	return errors.Join(errs...)
}

// logWriter opens the audit log as kube-apiserver does: created private (0600), rotated by
// lumberjack unless --audit-log-maxsize is 0.
func (c auditConfig) logWriter() (io.Writer, error) {
	if c.LogPath == "-" {
		return os.Stdout, nil
	}
	if err := os.MkdirAll(filepath.Dir(c.LogPath), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(c.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil || c.LogMaxSize == 0 {
		return f, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return &lumberjack.Logger{Filename: c.LogPath, MaxAge: c.LogMaxAge, MaxBackups: c.LogMaxBackups,
		MaxSize: c.LogMaxSize, Compress: c.LogCompress}, nil
}

// runAuditBackend starts b and returns what stops it, once the server has answered its last
// request: it sends the events still buffered.
func runAuditBackend(b audit.Backend) (stop func()) {
	stopCh := make(chan struct{})
	_ = b.Run(stopCh) // the library's backends start goroutines and never fail
	return func() {
		close(stopCh)
		b.Shutdown()
	}
}

// logBackend writes events to w as kube-apiserver's log backend does. In batch mode a batch
// goes to the file in one write (kube-apiserver writes each event on its own), which is most of
// the cost of an event on a small request (docs/benchmarks.md).
func (c auditConfig) logBackend(w io.Writer) audit.Backend {
	if c.LogMode != auditModeBatch {
		return unbatched(c.LogMode, c.logEncoder(w))
	}
	buf := bufio.NewWriterSize(w, 64<<10)
	batches := writtenPerBatch{c.logEncoder(buf), buf}
	return pluginbuffered.NewBackend(batches, pluginbuffered.BatchConfig{BufferSize: 10000,
		MaxBatchSize: c.LogBatchMaxSize, MaxBatchWait: c.LogBatchMaxWait})
}

// logEncoder writes each event to w in the log's format. The json format is sqlkube's encoder,
// which writes the same lines as kube's at a fraction of the cost (docs/benchmarks.md).
func (c auditConfig) logEncoder(w io.Writer) audit.Backend {
	if c.LogFormat == pluginlog.FormatJson {
		return auditlog.NewBackend(w)
	}
	return pluginlog.NewBackend(w, c.LogFormat, auditv1.SchemeGroupVersion)
}

// writtenPerBatch flushes what a batch's events wrote. It needs no lock: the batching backend
// hands it one batch at a time, from one goroutine (AsyncDelegate off, as kube's log batches).
type writtenPerBatch struct {
	audit.Backend
	buf *bufio.Writer
}

func (b writtenPerBatch) ProcessEvents(events ...*auditinternal.Event) bool {
	ok := b.Backend.ProcessEvents(events...)
	if err := b.buf.Flush(); err != nil {
		audit.HandlePluginError(pluginlog.PluginName, err, events...)
		return false
	}
	return ok
}

// webhookBatchConfig is kube-apiserver's default for the webhook backend, with the batch size
// and wait from the flags.
func (c auditConfig) webhookBatchConfig() pluginbuffered.BatchConfig {
	return pluginbuffered.BatchConfig{BufferSize: 10000, MaxBatchSize: c.WebhookBatchMaxSize, MaxBatchWait: c.WebhookBatchMaxWait,
		ThrottleEnable: true, ThrottleQPS: 10, ThrottleBurst: 15, AsyncDelegate: true}
}

// unbatched wraps a backend for a blocking mode (see auditModeBatch); a batching backend is
// returned as it is.
func unbatched(mode string, b audit.Backend) audit.Backend {
	if mode == auditModeBlocking {
		return ignoringFailures{b}
	}
	return b
}

// ignoringFailures is a blocking backend: a failure to record an event does not fail the request.
type ignoringFailures struct{ audit.Backend }

func (b ignoringFailures) ProcessEvents(events ...*auditinternal.Event) bool {
	b.Backend.ProcessEvents(events...)
	return true
}
