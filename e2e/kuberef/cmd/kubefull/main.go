// Command kubefull runs the full kube-apiserver on an etcd of its own process, with the security
// of sqlkube's production configuration (TLS, client certificates, RBAC, audit at Metadata to a
// file, priority and fairness), for `make bench`: e2e's TestBenchTable starts it to add
// kube-apiserver's column to its table (see docs/benchmarks.md).
//
//	kubefull --kube-apiserver BIN [--etcd BIN] --dir DIR --user NAME --group GROUP [--components]
//
// Once the server is ready it writes one JSON line to stdout: the server's URL, an admin
// kubeconfig (system:masters), a kubeconfig for --user in --group, and the PIDs of kube-apiserver
// and etcd. With --components (for e2e's cluster benchmark, make bench-cluster) it also writes
// kubeconfigs for system:kube-controller-manager and system:kube-scheduler, and names the CA and
// the ServiceAccount signing key that kube-controller-manager's --root-ca-file and
// --service-account-private-key-file take. It stops both when its standard input ends (its parent closed it or died) or on
// SIGINT or SIGTERM.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sqlkube/sqlkube/e2e/kuberef"
)

// ready is the line written once the server answers.
type ready struct {
	URL             string `json:"url"`
	AdminKubeconfig string `json:"adminKubeconfig"`
	UserKubeconfig  string `json:"userKubeconfig"`
	PIDs            []int  `json:"pids"`
	// Kubeconfigs are the components' kubeconfigs by user, with --components.
	Kubeconfigs       map[string]string `json:"kubeconfigs,omitempty"`
	CAFile            string            `json:"caFile,omitempty"`
	ServiceAccountKey string            `json:"serviceAccountKey,omitempty"`
}

// componentUsers are the identities of kube-controller-manager and kube-scheduler, which kube's
// bootstrap policy binds to their roles.
var componentUsers = []string{"system:kube-controller-manager", "system:kube-scheduler"}

func main() {
	bin := flag.String("kube-apiserver", "", "the kube-apiserver binary (required)")
	etcd := flag.String("etcd", "", "the etcd binary (default: etcd next to this command, as make bench builds it)")
	dir := flag.String("dir", "", "directory for the servers' files (required)")
	user := flag.String("user", "bencher", "user of the second kubeconfig")
	group := flag.String("group", "benchers", "group of the second kubeconfig's user")
	components := flag.Bool("components", false, "also write kubeconfigs for kube-controller-manager and kube-scheduler")
	flag.Parse()
	if *bin == "" || *dir == "" {
		fmt.Fprintln(os.Stderr, "kubefull: --kube-apiserver and --dir are required")
		os.Exit(2)
	}
	if err := run(*bin, *etcd, *dir, *user, *group, *components); err != nil {
		fmt.Fprintln(os.Stderr, "kubefull:", err)
		os.Exit(1)
	}
}

func run(bin, etcd, dir, user, group string, components bool) error {
	if etcd == "" {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		etcd = filepath.Join(filepath.Dir(self), "etcd")
	}
	s, err := kuberef.StartFullProcesses(bin, etcd, dir)
	if err != nil {
		return err
	}
	defer s.Stop()
	r := ready{URL: s.URL, AdminKubeconfig: filepath.Join(dir, "admin.kubeconfig"), UserKubeconfig: filepath.Join(dir, user+".kubeconfig"), PIDs: s.PIDs}
	if err := s.WriteKubeconfig(r.AdminKubeconfig, "system:admin", []string{"system:masters"}); err != nil {
		return err
	}
	if err := s.WriteKubeconfig(r.UserKubeconfig, user, []string{group}); err != nil {
		return err
	}
	if components {
		if err := writeComponentKubeconfigs(s, dir, &r); err != nil {
			return err
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		return err
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); stop <- syscall.SIGTERM }()
	<-stop
	return nil
}

// writeComponentKubeconfigs writes a kubeconfig for each of componentUsers (in no group: kube's
// bootstrap policy binds the users) and names them, the CA and the signing key in r; the files
// are where kuberef's kube-apiserver keeps them (DIR/pki).
func writeComponentKubeconfigs(s *kuberef.FullServer, dir string, r *ready) error {
	r.Kubeconfigs = map[string]string{}
	for _, user := range componentUsers {
		path := filepath.Join(dir, strings.TrimPrefix(user, "system:")+".kubeconfig")
		if err := s.WriteKubeconfig(path, user, nil); err != nil {
			return err
		}
		r.Kubeconfigs[user] = path
	}
	r.CAFile, r.ServiceAccountKey = filepath.Join(dir, "pki", "ca.crt"), filepath.Join(dir, "pki", "sa.key")
	return nil
}
