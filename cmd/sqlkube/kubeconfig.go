package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sqlkube/sqlkube/server/app"
	"github.com/sqlkube/sqlkube/server/pki"
)

const kubeconfigUsage = `sqlkube kubeconfig mints a client-certificate kubeconfig signed by the server's CA.

Usage:
  sqlkube kubeconfig --user NAME [--group G]... [--db DSN | --cert-dir DIR] [--server URL] [-o FILE]

The CA is read from --cert-dir, by default the one a server on --db uses without --cert-dir
(sqlkube-pki beside the SQLite file); the server URL is by default the one in that server's admin
kubeconfig.
`

// defaultServer is the URL minted kubeconfigs name when no admin kubeconfig tells the server's.
const defaultServer = "https://127.0.0.1:8080"

// runKubeconfig mints a client-certificate kubeconfig signed by the CA in --cert-dir.
func runKubeconfig(_ context.Context, args, env []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("sqlkube kubeconfig", pflag.ContinueOnError)
	dsn := fs.String("db", app.DefaultDSN, "database of the server (its --db): where the certificate directory and server URL are found when not given")
	certDir := fs.String("cert-dir", "", "certificate directory of the server (its --cert-dir), holding ca.crt and ca.key (default: the one a server on --db uses)")
	user := fs.String("user", "", "user name: the certificate's common name")
	groups := fs.StringArray("group", nil, "a group of the user: the certificate's organization (repeatable)")
	server := fs.String("server", "", "URL of the server (default: the server of the admin kubeconfig a server on --db writes, else "+defaultServer+")")
	out := fs.StringP("output", "o", "-", `file to write the kubeconfig to (mode 0600); "-" writes it to standard output`)
	help, err := parseCommandFlags(fs, kubeconfigUsage, args, env, stdout)
	if help {
		return 0
	}
	if err == nil && *user == "" {
		err = errors.New("--user is required")
	}
	if err == nil && *certDir == "" {
		if *certDir = app.DefaultCertDir(*dsn); *certDir == "" {
			err = errors.New("--cert-dir is required on PostgreSQL (the server's --cert-dir)")
		}
	}
	if err == nil && *server == "" {
		*server = adminServer(app.DefaultAdminKubeconfig(*dsn, *certDir))
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

// adminServer is the server URL of the admin kubeconfig at path, or defaultServer when there is
// none to read.
func adminServer(path string) string {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return defaultServer
	}
	if ctx, ok := cfg.Contexts[cfg.CurrentContext]; ok {
		if cluster, ok := cfg.Clusters[ctx.Cluster]; ok && cluster.Server != "" {
			return cluster.Server
		}
	}
	return defaultServer
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
