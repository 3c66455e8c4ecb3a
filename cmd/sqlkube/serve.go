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
	cfg, err := app.Parse(args, env, stdout)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "sqlkube: %v\nRun 'sqlkube --help' for usage.\n", err)
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
		fmt.Fprintf(stderr, "sqlkube: %v\n", err)
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
