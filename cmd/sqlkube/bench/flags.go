package bench

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// The operations --op accepts.
const (
	opCreate = "create"
	opUpdate = "update"
	opGet    = "get"
	opList   = "list"
	opWatch  = "watch"
	opMixed  = "mixed"
)

var knownOps = []string{opCreate, opUpdate, opGet, opList, opWatch, opMixed}

// options is everything the command line sets.
type options struct {
	server     string
	kubeconfig string
	context    string
	token      string
	insecure   bool

	resource  resourceRef
	namespace string
	// keepObjects leaves the run's objects in place rather than deleting them at the end.
	keepObjects bool
	createCRD   bool

	op          string
	concurrency int
	duration    time.Duration
	count       int // total operations (writes for watch); 0 runs for duration instead
	objectSize  int
	objects     int
	pageSize    int

	watchers     int
	rate         float64
	drainTimeout time.Duration
	idle         bool

	output string
	// serverPIDs are the server's processes on this machine, whose CPU time over the measured
	// part of a run (not the working set's preparation) the report gives per operation.
	serverPIDs []int
}

// resourceRef names a resource by group, version and plural name; Group is "" for the core group.
type resourceRef struct {
	Group, Version, Resource string
}

func (r resourceRef) String() string {
	if r.Group == "" {
		return r.Version + "/" + r.Resource
	}
	return r.Group + "/" + r.Version + "/" + r.Resource
}

// Set accepts group/version/resource, or version/resource (and core/version/resource) for the
// core group.
func (r *resourceRef) Set(s string) error {
	parts := strings.Split(s, "/")
	switch {
	case len(parts) == 2:
		parts = append([]string{""}, parts...)
	case len(parts) == 3 && parts[0] == "core":
		parts[0] = ""
	case len(parts) != 3:
		return fmt.Errorf("want group/version/resource or version/resource, got %q", s)
	}
	if parts[1] == "" || parts[2] == "" {
		return fmt.Errorf("want group/version/resource or version/resource, got %q", s)
	}
	*r = resourceRef{Group: parts[0], Version: parts[1], Resource: parts[2]}
	return nil
}

func (r *resourceRef) Type() string { return "group/version/resource" }

func newFlagSet(o *options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("sqlkube bench", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.StringVar(&o.server, "server", "", "API server URL (default http://127.0.0.1:8080 unless --kubeconfig is given; overrides the kubeconfig's server)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file for the server, credentials and TLS settings")
	fs.StringVar(&o.context, "context", "", "kubeconfig context to use (default: its current context)")
	fs.StringVar(&o.token, "token", "", "bearer token to send (overrides the kubeconfig's)")
	fs.BoolVar(&o.insecure, "insecure-skip-tls-verify", false, "do not verify the server's certificate")

	o.resource = resourceRef{Version: "v1", Resource: "configmaps"}
	fs.Var(&o.resource, "resource", "resource to drive, group/version/resource (v1/configmaps for the core group); namespaced resources only")
	fs.StringVar(&o.namespace, "namespace", "bench", "namespace to work in; created if missing")
	fs.BoolVar(&o.createCRD, "create-crd", false, "create a CRD serving --resource (kind derived from the plural name) and wait until it is established")

	fs.StringVar(&o.op, "op", opCreate, "operation: "+strings.Join(knownOps, ", "))
	fs.IntVar(&o.concurrency, "concurrency", 64, "concurrent clients (each one request at a time); for --op watch, the most writes in flight")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long to measure")
	fs.IntVar(&o.count, "count", 0, "stop after this many operations (writes for --op watch) instead of after --duration")
	fs.IntVar(&o.objectSize, "object-size", 1024, "bytes of payload per object (ConfigMap data, otherwise spec)")
	fs.IntVar(&o.objects, "objects", 1000, "working set created before update, get, list and mixed runs (at least --concurrency)")
	fs.IntVar(&o.pageSize, "page-size", 500, "limit per list request")

	fs.IntVar(&o.watchers, "watchers", 100, "watchers on the collection for --op watch")
	fs.Float64Var(&o.rate, "rate", 100, "writes per second for --op watch, started on schedule")
	fs.DurationVar(&o.drainTimeout, "drain-timeout", 10*time.Second, "for --op watch, how long to wait after the last write for watchers to receive it")
	fs.BoolVar(&o.idle, "idle", false, "for --op watch: write nothing; open the watches over shared HTTP/2 connections, as one client's informers do, and hold them for --duration once all are open")

	fs.BoolVar(&o.keepObjects, "keep-objects", false, "leave the objects the run created; by default they are deleted at the end (they carry the label "+runLabel+"=RUN)")
	fs.StringVar(&o.output, "output", "table", "result format: table, or json (a single JSON object on stdout)")
	fs.IntSliceVar(&o.serverPIDs, "server-pid", nil, "a process ID of the server, on this machine, whose CPU time over the measured part (not the working set's preparation) is reported per operation (for watch, per event delivered, the writes included); repeat for several processes (kube-apiserver and etcd)")
	return fs
}

// parseFlags reads args into options. It returns pflag.ErrHelp for --help, having written the
// usage to helpOut; other errors are the caller's to report.
func parseFlags(args []string, helpOut io.Writer) (options, error) {
	var o options
	fs := newFlagSet(&o)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintf(helpOut, "sqlkube bench drives a Kubernetes API server and reports throughput and latency.\n\nUsage:\n  sqlkube bench [flags]\n\nFlags:\n%s", fs.FlagUsages())
		}
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.server == "" && o.kubeconfig == "" {
		o.server = "http://127.0.0.1:8080"
	}
	return o, o.validate()
}

func (o options) validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(slices.Contains(knownOps, o.op), "--op must be one of %s, got %q", strings.Join(knownOps, ", "), o.op)
	check(o.concurrency >= 1, "--concurrency must be at least 1")
	check(o.count > 0 || o.duration > 0, "--duration must be positive (or give --count)")
	check(o.count >= 0, "--count must not be negative")
	check(o.objectSize >= 0, "--object-size must not be negative")
	check(o.pageSize >= 1, "--page-size must be at least 1")
	check(o.namespace != "", "--namespace must not be empty")
	check(o.output == "table" || o.output == "json", "--output must be table or json, got %q", o.output)
	if o.needsWorkingSet() {
		check(o.objects >= o.concurrency, "--objects (%d) must be at least --concurrency (%d): each client updates objects of its own", o.objects, o.concurrency)
	}
	check(!o.idle || o.op == opWatch, "--idle is for --op watch only")
	check(!o.idle || o.count == 0, "--idle writes nothing: --count does not apply")
	if o.op == opWatch {
		check(o.watchers >= 1, "--watchers must be at least 1")
		check(o.rate > 0, "--rate must be positive")
		check(o.drainTimeout > 0, "--drain-timeout must be positive")
	}
	return errors.Join(errs...)
}

// needsWorkingSet says whether the op measures objects that must exist first.
func (o options) needsWorkingSet() bool {
	return o.op == opUpdate || o.op == opGet || o.op == opList || o.op == opMixed
}
