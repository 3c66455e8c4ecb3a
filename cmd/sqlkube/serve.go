package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/sqlkube/sqlkube/server/app"
)

func runServe(ctx context.Context, args, env []string, stdout, stderr io.Writer) int {
	return serve(ctx, "sqlkube", app.Parse, args, env, stdout, stderr)
}

// runKubeAPIServer is the program started under kube-apiserver's name (a KUBEBUILDER_ASSETS
// link for envtest): no subcommands, as kube-apiserver has none, and kube-apiserver's defaults.
func runKubeAPIServer(ctx context.Context, args, env []string, stdout, stderr io.Writer) int {
	return serve(ctx, kubeAPIServerName, app.ParseKubeAPIServer, args, env, stdout, stderr)
}

// serve parses the server's flags with parse and serves until ctx ends; name is the program's
// name in errors.
func serve(ctx context.Context, name string, parse func(args, env []string, helpOut io.Writer) (app.Config, error),
	args, env []string, stdout, stderr io.Writer) int {
	cfg, err := parse(args, env, stdout)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", name, err, name)
		return 2
	}
	if cfg.Version {
		return runVersion(ctx, nil, env, stdout, stderr)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	// Kubernetes' libraries log through klog: route it through the same structured log.
	klog.SetSlogLogger(log)
	setDefaultGCPercent(env)
	if err := app.Run(ctx, cfg, log); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// defaultGCPercent is the garbage collector's target (GOGC) unless the environment sets one. A
// write allocates ~60 KB that is garbage once answered, over a live heap of a few tens of MB:
// collecting half as often as Go's default of 100 halves the collector's CPU per write, for
// ~25 MB more memory (docs/design.md).
const defaultGCPercent = 200

// setDefaultGCPercent applies defaultGCPercent, unless GOGC is in env: the runtime has then
// applied the operator's choice.
func setDefaultGCPercent(env []string) {
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOGC=") {
			return
		}
	}
	debug.SetGCPercent(defaultGCPercent)
}
