package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/sqlkube/sqlkube/server/app"
)

// parseCommandFlags applies the SQLKUBE_ environment variables in env, then args, to a
// subcommand's flags. --help prints usage and the flags to stdout, as the main command's help
// does, and answers help true; a bad flag is only returned, for the caller to report on stderr.
func parseCommandFlags(fs *pflag.FlagSet, usage string, args, env []string, stdout io.Writer) (help bool, err error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err = app.ApplyEnv(fs, env)
	if err == nil {
		err = fs.Parse(args)
	}
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprintf(stdout, "%s\nFlags:\n%s", usage, fs.FlagUsages())
		return true, nil
	}
	return false, err
}
