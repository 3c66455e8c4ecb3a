package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/pflag"
)

// Main runs `sqlkube bench` with args (without the subcommand's name) and returns the exit code:
// 0 when the run completed (whatever errors the server answered; they are in the report), 1 when
// it could not run, 2 for bad flags.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	tuneGC()
	o, err := parseFlags(args, stdout)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "sqlkube bench:", err)
		return 2
	}
	rep, err := run(ctx, o, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "sqlkube bench:", err)
		return 1
	}
	if o.output == "json" {
		err = writeJSON(stdout, rep)
	} else {
		err = writeTable(stdout, rep)
	}
	if err != nil {
		fmt.Fprintln(stderr, "sqlkube bench:", err)
		return 1
	}
	return 0
}

// tuneGC makes the garbage collector run a quarter as often as by default, unless GOGC says
// otherwise. The tool's live heap is small (histograms, connection buffers), so at the default
// the collector runs dozens of times a second under load; at 400 the tool takes ~15% less CPU per
// request from the server it measures, for a heap of at most five times the live one.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}

// run prepares the target, measures the operation and, unless --keep-objects, deletes the
// objects the run created.
func run(ctx context.Context, o options, stderr io.Writer) (report, error) {
	b, err := newBench(ctx, o, stderr)
	if err != nil {
		return report{}, err
	}
	rep, err := b.measure(ctx)
	if !o.keepObjects {
		if cleanupErr := b.deleteRunObjects(ctx); cleanupErr != nil {
			fmt.Fprintf(stderr, "sqlkube bench: the run's objects (label %s=%s) are left: %v\n", runLabel, b.runID, cleanupErr)
		}
	}
	return rep, err
}

func (b *bench) measure(ctx context.Context) (report, error) {
	switch {
	case b.opts.idle:
		return b.runIdleWatch(ctx)
	case b.opts.op == opWatch:
		return b.runWatch(ctx)
	}
	return b.runOps(ctx)
}

// cleanupTimeout bounds deleting a run's objects, which also happens after an interrupted run.
const cleanupTimeout = time.Minute

// deleteRunObjects deletes every object the run created, by its label, in one request.
func (b *bench) deleteRunObjects(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	code, detail, err := b.client.send(ctx, http.MethodDelete, b.target.runObjectsPath(), nil, nil)
	if err == nil && !isSuccess(code) {
		err = fmt.Errorf("HTTP %d: %s", code, detail)
	}
	return err
}

// newBench connects to the server and prepares the target.
func newBench(ctx context.Context, o options, stderr io.Writer) (*bench, error) {
	conns := o.concurrency + 1
	if o.op == opWatch {
		conns += o.watchers
	}
	client, err := newAPIClient(o, conns)
	if err != nil {
		return nil, err
	}
	runID := fmt.Sprintf("%08x", rand.Uint32())
	tgt, err := resolveTarget(ctx, client, o, runID)
	if err != nil {
		return nil, err
	}
	return &bench{opts: o, client: client, target: tgt, runID: runID, stderr: stderr}, nil
}
