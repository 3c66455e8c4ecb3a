package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/sqlkube/sqlkube/server/pki"
)

// runKubeconfig mints a client-certificate kubeconfig signed by the CA in --cert-dir:
//
//	sqlkube kubeconfig --cert-dir DIR --user NAME [--group G]... [--server URL] [-o FILE]
func runKubeconfig(_ context.Context, args, _ []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("sqlkube kubeconfig", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	certDir := fs.String("cert-dir", "", "certificate directory of the server (its --cert-dir), holding ca.crt and ca.key")
	user := fs.String("user", "", "user name: the certificate's common name")
	groups := fs.StringArray("group", nil, "a group of the user: the certificate's organization (repeatable)")
	server := fs.String("server", "https://127.0.0.1:8080", "URL of the server")
	out := fs.StringP("output", "o", "-", `file to write the kubeconfig to (mode 0600); "-" writes it to standard output`)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "sqlkube kubeconfig mints a client-certificate kubeconfig signed by the server's CA.\n\nUsage:\n  sqlkube kubeconfig --cert-dir DIR --user NAME [--group G]... [--server URL] [-o FILE]\n\nFlags:\n%s", fs.FlagUsages())
	}
	err := fs.Parse(args)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err == nil && (*certDir == "" || *user == "") {
		err = errors.New("--cert-dir and --user are required")
	}
	if err == nil {
		err = writeClientKubeconfig(pki.Dir(*certDir), *server, *user, *groups, *out, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "sqlkube kubeconfig: %v\n", err)
		return 2
	}
	return 0
}

func writeClientKubeconfig(dir pki.Dir, server, user string, groups []string, out string, stdout io.Writer) error {
	ca, err := dir.LoadCA()
	if err != nil {
		return fmt.Errorf("reading the CA: %w", err)
	}
	data, err := ca.Kubeconfig(server, user, groups)
	if err != nil {
		return err
	}
	if out == "-" {
		_, err = stdout.Write(data)
		return err
	}
	return pki.WriteKubeconfig(out, data)
}
