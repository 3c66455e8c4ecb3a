package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func runVersion(_ context.Context, args, _ []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "sqlkube version: unexpected argument %q\n", args[0])
		return 2
	}
	fmt.Fprintf(stdout, "sqlkube %s (%s%s)\n", version, runtime.Version(), vcsRevision())
	return 0
}

// vcsRevision names the commit the binary was built from, when the Go toolchain recorded it.
func vcsRevision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			return ", commit " + s.Value
		}
	}
	return ""
}
