package kuberef

import (
	"testing"
)

// TestConformance runs every scenario against the reference server and sqlkube in lockstep and
// fails on each response that differs after normalization.
func TestConformance(t *testing.T) {
	dir := t.TempDir()
	ref, err := Start(dir)
	if err != nil {
		t.Fatalf("starting the reference server: %v", err)
	}
	t.Cleanup(ref.Stop)
	sk, err := startSqlkube(dir)
	if err != nil {
		t.Fatalf("starting sqlkube: %v", err)
	}
	t.Cleanup(sk.stop)
	requests := 0
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			want := newTarget("kube", ref.URL, ref.Client)
			got := newTarget("sqlkube", sk.url, sk.client)
			for i, s := range sc.steps {
				requests++
				w, err := want.do(want.expand(s))
				if err != nil {
					t.Fatalf("step %d %s %s on kube: %v", i, s.method, s.path, err)
				}
				g, err := got.do(got.expand(s))
				if err != nil {
					t.Fatalf("step %d %s %s on sqlkube: %v", i, s.method, s.path, err)
				}
				same := pretty(w) == pretty(g)
				switch {
				case s.known != "" && same:
					t.Errorf("step %d %s %s: known difference %q is gone; remove the mark", i, s.method, s.path, s.known)
				case s.known != "":
					t.Logf("step %d %s %s: known difference: %s", i, s.method, s.path, s.known)
				case !same:
					t.Errorf("step %d %s %s %s\nkube:\n%s\nsqlkube:\n%s", i, s.method, s.path, s.body, pretty(w), pretty(g))
				}
			}
		})
	}
	t.Logf("%d scenarios, %d requests to each server", len(scenarios), requests)
}
