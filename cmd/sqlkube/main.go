// Command sqlkube serves the Kubernetes API for storing and watching objects, keeping them in
// SQLite or PostgreSQL.
//
// Usage:
//
//	sqlkube [flags]   serve the API (see sqlkube --help)
//	sqlkube version   print the version
//	sqlkube help      print the usage
//	sqlkube kubeconfig  mint a client-certificate kubeconfig (see sqlkube kubeconfig --help)
//	sqlkube bench     load-test a Kubernetes API server (see sqlkube bench --help)
//	sqlkube snapshot  save, restore and check snapshots (see sqlkube snapshot --help)
//	sqlkube compact   discard all history now and rewrite the database (see sqlkube compact --help)
//
// Started as kube-apiserver (a link of that name), it is the server with kube-apiserver's
// defaults, for envtest's KUBEBUILDER_ASSETS (see README).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/sqlkube/sqlkube/cmd/sqlkube/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := program(os.Args[0])(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// subcommand runs one of sqlkube's commands with the arguments after its name and returns the
// process exit code.
type subcommand func(ctx context.Context, args, env []string, stdout, stderr io.Writer) int

var subcommands = map[string]subcommand{
	"version":    runVersion,
	"kubeconfig": runKubeconfig,
	"snapshot":   runSnapshot,
	"compact":    runCompact,
	"bench": func(ctx context.Context, args, _ []string, stdout, stderr io.Writer) int {
		return bench.Main(ctx, args, stdout, stderr)
	},
	"help": func(ctx context.Context, _, env []string, stdout, stderr io.Writer) int {
		return runServe(ctx, []string{"--help"}, env, stdout, stderr)
	},
}

// run is the whole program: it picks the subcommand (none means serve) and returns the exit code.
// ctx ends when the process is asked to stop.
func run(ctx context.Context, args, env []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && !isFlag(args[0]) {
		cmd, ok := subcommands[args[0]]
		if !ok {
			fmt.Fprintf(stderr, "sqlkube: unknown command %q (run sqlkube --help)\n", args[0])
			return 2
		}
		return cmd(ctx, args[1:], env, stdout, stderr)
	}
	return runServe(ctx, args, env, stdout, stderr)
}

// program is what the binary runs, by the name it was started under (argv[0]).
func program(name string) subcommand {
	if filepath.Base(name) == kubeAPIServerName {
		return runKubeAPIServer
	}
	return run
}

// kubeAPIServerName is the program name under which sqlkube is kube-apiserver
// (runKubeAPIServer).
const kubeAPIServerName = "kube-apiserver"

func isFlag(arg string) bool { return len(arg) > 0 && arg[0] == '-' }
