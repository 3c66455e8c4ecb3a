// Command kuberef runs the reference server until interrupted, for trying requests by hand.
package main

import (
	"fmt"
	"os"
	"os/signal"

	"github.com/sqlkube/sqlkube/e2e/kuberef"
)

func main() {
	dir, err := os.MkdirTemp("", "kuberef")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	s, err := kuberef.Start(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("serving", s.URL)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	<-stop
	s.Stop()
}
