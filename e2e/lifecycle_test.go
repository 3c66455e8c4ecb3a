package e2e

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestGracefulShutdownEndsWatches checks that SIGTERM ends open watches (the client sees its
// result channel close) and that the process then exits 0.
func TestGracefulShutdownEndsWatches(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		w, err := s.clientset().CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		defer w.Stop()
		s.stop()
		select {
		case <-drained(w.ResultChan()):
		case <-time.After(stopTimeout):
			t.Fatal("watch still open after the server exited")
		}
	})
}

// drained discards what in delivers and closes once in is closed, so that a select can wait for
// the end of a watch.
func drained[E any](in <-chan E) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		for range in {
		}
		close(out)
	}()
	return out
}

func TestVersionCommand(t *testing.T) {
	code, out := runToExit(t, nil, "version")
	if code != 0 || !strings.HasPrefix(out, "sqlkube ") {
		t.Fatalf("sqlkube version: exit %d, output %q", code, out)
	}
}
