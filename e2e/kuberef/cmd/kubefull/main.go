// Command kubefull runs the full kube-apiserver on an etcd of its own process, with the security
// of sqlkube's production configuration (TLS, client certificates, RBAC, audit at Metadata to a
// file, priority and fairness), for `make bench`: e2e's TestBenchTable starts it to add
// kube-apiserver's column to its table (see docs/benchmarks.md).
//
//	kubefull --kube-apiserver BIN [--etcd BIN] --dir DIR --user NAME --group GROUP
//
// Once the server is ready it writes one JSON line to stdout: the server's URL, an admin
// kubeconfig (system:masters), a kubeconfig for --user in --group, and the PIDs of kube-apiserver
// and etcd. It stops both when its standard input ends (its parent closed it or died) or on
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
	"syscall"

	"github.com/sqlkube/sqlkube/e2e/kuberef"
)

// ready is the line written once the server answers.
type ready struct {
	URL             string `json:"url"`
	AdminKubeconfig string `json:"adminKubeconfig"`
	UserKubeconfig  string `json:"userKubeconfig"`
	PIDs            []int  `json:"pids"`
}

func main() {
	bin := flag.String("kube-apiserver", "", "the kube-apiserver binary (required)")
	etcd := flag.String("etcd", "", "the etcd binary (default: etcd next to this command, as make bench builds it)")
	dir := flag.String("dir", "", "directory for the servers' files (required)")
	user := flag.String("user", "bencher", "user of the second kubeconfig")
	group := flag.String("group", "benchers", "group of the second kubeconfig's user")
	flag.Parse()
	if *bin == "" || *dir == "" {
		fmt.Fprintln(os.Stderr, "kubefull: --kube-apiserver and --dir are required")
		os.Exit(2)
	}
	if err := run(*bin, *etcd, *dir, *user, *group); err != nil {
		fmt.Fprintln(os.Stderr, "kubefull:", err)
		os.Exit(1)
	}
}

func run(bin, etcd, dir, user, group string) error {
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
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		return err
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); stop <- syscall.SIGTERM }()
	<-stop
	return nil
}
