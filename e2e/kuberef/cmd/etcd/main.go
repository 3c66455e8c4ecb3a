// Command etcd is etcd's own server (go.etcd.io/etcd/server/v3/etcdmain, the version this module
// pins), built here so that `make bench` runs kube-apiserver on an etcd of its own process, whose
// CPU and memory are counted as the server's, as in a cluster.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
