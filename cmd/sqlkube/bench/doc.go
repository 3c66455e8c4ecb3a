// Package bench is `sqlkube bench`, a load tool that drives any Kubernetes API server (sqlkube,
// or kube-apiserver through a kubeconfig) over HTTP(S) and reports throughput, latency
// percentiles and errors by status code.
//
// The entry point is Main(ctx, args, stdout, stderr), where args follow the subcommand's name:
//
//	os.Exit(bench.Main(ctx, os.Args[2:], os.Stdout, os.Stderr))
//
// Operations: create, update, get, list (paged), mixed, and watch (N watchers measuring how long
// after a write's acknowledgement its event arrives). A progress line goes to stderr every second;
// the result goes to stdout as a table, or as one JSON object with --output json.
//
// Latencies go into fixed-size log-linear histograms (0.8% precision), one per client, so memory
// stays flat however long a run lasts; clients share one keep-alive transport with an idle
// connection for each of them (and no more: keep-alive holds), request bodies are spliced from a
// template instead of encoded, and watchers, list clients and updates skim responses for the few
// fields they need instead of decoding them, so that the tool takes as little as it can of a
// machine it shares with the server (see docs/benchmarks.md, "The load tool").
package bench
