package kuberef

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// endpoint is a running server the steps are sent to.
type endpoint struct {
	name   string
	url    string
	client *http.Client
	// clientFor authenticates as another user (nil on the apiextensions reference, which
	// authenticates no one).
	clientFor func(user string, groups []string) (*http.Client, error)
	// auditLog is the file the server writes its audit events to, when they are compared.
	auditLog string
	// admissionChain gives the admission chain sqlkube logged at start (chainLog).
	admissionChain <-chan []string
}

// startServers starts the reference server and sqlkube on SQLite and, when reachable, on
// PostgreSQL, each on fresh storage.
func startServers(t *testing.T) (kube endpoint, sqlkubes []endpoint) {
	dir := t.TempDir()
	ref, err := Start(dir)
	if err != nil {
		t.Fatalf("starting the reference server: %v", err)
	}
	t.Cleanup(ref.Stop)
	return endpoint{name: "kube", url: ref.URL, client: ref.Client}, startSqlkubes(t, dir, false)
}

// startSqlkubes builds sqlkube and starts it on SQLite and, when reachable, on PostgreSQL; with
// audit, each records its audit events as the full reference does.
func startSqlkubes(t *testing.T, dir string, audit bool) []endpoint {
	bin, err := buildSqlkube(dir)
	if err != nil {
		t.Fatal(err)
	}
	dsns := map[string]string{"sqlite": "sqlite://" + filepath.Join(dir, "sqlkube.db")}
	if pg := postgresDSN(t); pg != "" {
		dsns["postgres"] = pg
	}
	var sqlkubes []endpoint
	for _, backend := range []string{"sqlite", "postgres"} {
		if dsns[backend] == "" {
			continue
		}
		skDir := filepath.Join(dir, backend)
		sk, err := startSqlkube(bin, skDir, dsns[backend], audit)
		if err != nil {
			t.Fatalf("starting sqlkube on %s: %v", backend, err)
		}
		t.Cleanup(sk.stop)
		e := endpoint{name: "sqlkube on " + backend, url: sk.url, client: sk.client, clientFor: sk.clientFor, admissionChain: sk.admissionChain}
		if audit {
			e.auditLog = sqlkubeAuditLog(skDir)
		}
		sqlkubes = append(sqlkubes, e)
	}
	return sqlkubes
}

// lockstep sends each step to kube and to every sqlkube backend at once and compares each
// backend's normalized answer with kube's.
type lockstep struct {
	kube     *target
	sqlkubes []*target
}

func newLockstep(kube endpoint, sqlkubes []endpoint) *lockstep {
	l := &lockstep{kube: newTarget(kube)}
	for _, e := range sqlkubes {
		l.sqlkubes = append(l.sqlkubes, newTarget(e))
	}
	return l
}

func (l *lockstep) all() []*target { return append([]*target{l.kube}, l.sqlkubes...) }

// compareHeaders compares the Audit-Id and priority and fairness headers too.
func (l *lockstep) compareHeaders() *lockstep {
	for _, t := range l.all() {
		t.headers = true
	}
	return l
}

// ignoreListRevisions leaves the resourceVersion of lists and tables out of the comparison: it
// is the store's current revision, which against the full kube-apiserver counts writes no step
// made (kube-apiserver renews its own leases; sqlkube's controllers give each new namespace its
// ServiceAccount and CA ConfigMap, which kube-apiserver alone does not). Objects' resourceVersions
// are still compared.
func (l *lockstep) ignoreListRevisions() *lockstep {
	for _, t := range l.all() {
		t.listRevisions = false
	}
	return l
}

// reset starts a new scenario on every server.
func (l *lockstep) reset() {
	for _, t := range l.all() {
		t.reset()
	}
}

// difference is one backend's answer to a step, or its audit events, that are not kube's.
type difference struct {
	backend    string
	kube, skub string
	// audit says that the difference is in the request's audit events.
	audit bool
}

// run sends s to every server and returns the backends whose answer differs from kube's.
func (l *lockstep) run(s step) ([]difference, error) {
	targets := l.all()
	results := make([]result, len(targets))
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { results[i], errs[i] = t.do(t.expand(s)) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, &stepError{targets[i].name, err}
		}
	}
	var diffs []difference
	want, wantAudit := pretty(results[0]), prettyEvents(results[0].audit)
	for i, r := range results[1:] {
		if got := pretty(r); got != want {
			diffs = append(diffs, difference{backend: l.sqlkubes[i].name, kube: want, skub: got})
		}
		if got := prettyEvents(r.audit); got != wantAudit {
			diffs = append(diffs, difference{backend: l.sqlkubes[i].name, kube: wantAudit, skub: got, audit: true})
		}
	}
	return diffs, nil
}

// mergeDifferences reports backends that answered alike once.
func mergeDifferences(diffs []difference) []difference {
	var out []difference
	for _, d := range diffs {
		if len(out) > 0 && out[len(out)-1].skub == d.skub && out[len(out)-1].audit == d.audit {
			out[len(out)-1].backend += ", " + d.backend
			continue
		}
		out = append(out, d)
	}
	return out
}

// lineDiff shows the lines of a and b that differ, with two lines of context, as a unified
// diff of their longest common subsequence.
func lineDiff(a, b string) string {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var lines []string
	var changed []bool
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			lines, changed = append(lines, "  "+x[i]), append(changed, false)
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			lines, changed = append(lines, "+ "+y[j]), append(changed, true)
			j++
		default:
			lines, changed = append(lines, "- "+x[i]), append(changed, true)
			i++
		}
	}
	var out []string
	for k, l := range lines {
		near := false
		for d := max(0, k-2); d <= min(len(lines)-1, k+2); d++ {
			near = near || changed[d]
		}
		if near {
			out = append(out, l)
		} else if len(out) > 0 && out[len(out)-1] != "  ..." {
			out = append(out, "  ...")
		}
	}
	return strings.Join(out, "\n")
}

type stepError struct {
	server string
	err    error
}

func (e *stepError) Error() string { return "on " + e.server + ": " + e.err.Error() }

// TestConformance runs every scenario against the reference server and sqlkube in lockstep and
// fails on each response that differs after normalization.
func TestConformance(t *testing.T) {
	kube, sqlkubes := startServers(t)
	runScenarios(t, newLockstep(kube, sqlkubes), allScenarios())
}

// runScenarios runs each scenario as a subtest, failing on every answer that differs from
// kube's but for the known differences marked on its steps.
func runScenarios(t *testing.T, l *lockstep, all []scenario) {
	requests := 0
	for _, sc := range all {
		t.Run(sc.name, func(t *testing.T) {
			l.reset()
			for i, s := range sc.steps {
				requests++
				diffs, err := l.run(s)
				if err != nil {
					t.Fatalf("step %d %s %s %v", i, s.method, s.path, err)
				}
				answers, audits := splitDifferences(diffs)
				l.report(t, i, s, "answer", s.known, answers)
				l.report(t, i, s, "audit events", s.knownAudit, audits)
			}
		})
	}
	l.reset()
	t.Logf("%d scenarios, %d requests to each of %d servers", len(all), requests, len(l.all()))
}

// splitDifferences parts differences of answers from differences of audit events.
func splitDifferences(diffs []difference) (answers, audits []difference) {
	for _, d := range diffs {
		if d.audit {
			audits = append(audits, d)
		} else {
			answers = append(answers, d)
		}
	}
	return answers, audits
}

// report fails on the differences of step i's answers or audit events (what), logs them if
// they are known, and fails if a known one is gone.
func (l *lockstep) report(t *testing.T, i int, s step, what, known string, diffs []difference) {
	t.Helper()
	switch {
	case known != "" && len(diffs) == 0:
		t.Errorf("step %d %s %s: known difference of its %s %q is gone; remove the mark", i, s.method, s.path, what, known)
	case known != "":
		t.Logf("step %d %s %s: known difference of its %s on %d of %d backends: %s", i, s.method, s.path, what, len(diffs), len(l.sqlkubes), known)
		for _, d := range mergeDifferences(diffs) {
			t.Logf("--- kube\n+++ %s\n%s", d.backend, lineDiff(d.kube, d.skub))
		}
	default:
		for _, d := range mergeDifferences(diffs) {
			t.Errorf("step %d %s%s %s %.300s: %s differ\n--- kube\n+++ %s\n%s", i, asUser(s), s.method, s.path, s.body, what, d.backend, lineDiff(d.kube, d.skub))
		}
	}
}

// prettyEvents shows audit events one field a line, for a line diff.
func prettyEvents(events []any) string {
	b, _ := json.MarshalIndent(events, "", "  ")
	return string(b)
}

// asUser names the identity of a step that is not the admin's, for messages.
func asUser(s step) string {
	if s.as == "" {
		return ""
	}
	return "(as " + s.as + ") "
}
