package app

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/sqlkube/sqlkube/server/endpoints/filters"

	"github.com/spf13/pflag"
)

// operationsConfig is how the server protects itself and how it is operated: request limits and
// timeouts, the request log, profiling and shutdown, with kube-apiserver's flag names.
type operationsConfig struct {
	Limits                filters.Limits
	RequestLogLevel       slog.Level
	Profiling             bool
	ShutdownDelayDuration time.Duration
	// EncryptionProviderConfig is kube's EncryptionConfiguration file; empty encrypts nothing.
	EncryptionProviderConfig string
}

func addOperationsFlags(fs *pflag.FlagSet, c *operationsConfig) {
	defaults := filters.DefaultLimits()
	fs.IntVar(&c.Limits.MaxRequestsInFlight, "max-requests-inflight", defaults.MaxRequestsInFlight,
		"most non-mutating requests served at once (watches are not counted); beyond it, 429 with Retry-After; 0 is no limit. With priority and fairness, this plus --max-mutating-requests-inflight is the server's concurrency")
	fs.IntVar(&c.Limits.MaxMutatingRequestsInFlight, "max-mutating-requests-inflight", defaults.MaxMutatingRequestsInFlight,
		"most mutating requests served at once; beyond it, 429 with Retry-After; 0 is no limit")
	fs.BoolVar(&c.Limits.PriorityAndFairness, "enable-priority-and-fairness", defaults.PriorityAndFairness,
		"queue requests fairly between users by FlowSchema and PriorityLevelConfiguration (flowcontrol.apiserver.k8s.io) instead of refusing them at the in-flight limits")
	fs.DurationVar(&c.Limits.RequestTimeout, "request-timeout", defaults.RequestTimeout,
		"longest a request other than a watch may take; past it, 504 Timeout and its work is abandoned")
	c.Limits.MinRequestTimeout = defaults.MinRequestTimeout
	fs.Var(secondsValue{&c.Limits.MinRequestTimeout}, "min-request-timeout",
		"shortest time, in seconds, a watch without timeoutSeconds lasts; each lasts a random time between it and twice it")
	c.RequestLogLevel = slog.LevelDebug
	fs.Var((*levelValue)(&c.RequestLogLevel), "request-log-level",
		"level of the line logged for each request answered below 500 (those at 500 and above are errors): debug, info, warn or error")
	fs.BoolVar(&c.Profiling, "profiling", true, "serve Go's profiles at /debug/pprof/ to users authorized for that path")
	fs.StringVar(&c.EncryptionProviderConfig, "encryption-provider-config", "",
		"kube's EncryptionConfiguration file (apiserver.config.k8s.io/v1): which resources are encrypted at rest, with which providers and keys (aesgcm, aescbc, secretbox, identity, kms)")
	fs.DurationVar(&c.ShutdownDelayDuration, "shutdown-delay-duration", 0,
		"on SIGTERM, keep serving this long with /readyz failing, so that load balancers stop sending requests before the server stops")
}

// secondsValue is a duration flag given in whole seconds, as kube-apiserver's --min-request-timeout.
type secondsValue struct{ d *time.Duration }

func (v secondsValue) String() string {
	if v.d == nil {
		return "0"
	}
	return strconv.FormatInt(int64(*v.d/time.Second), 10)
}

func (v secondsValue) Type() string { return "int" }

func (v secondsValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return err
	}
	*v.d = time.Duration(n) * time.Second
	return nil
}
