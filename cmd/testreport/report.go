package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output and build-fail events name the package here
}

// testID names a test (or subtest, "TestX/sub") of a package; a package's own output has Test "".
type testID struct{ Package, Test string }

// report keeps each running test's output until the test ends: a passed test's output is dropped,
// a failed one's printed whole, a skipped one's kept for the summary.
type report struct {
	out            io.Writer
	pending        map[testID][]string
	skipped        map[testID]string
	passed, failed int
	failedPackages []string
	sawEvents      bool
}

func newReport(out io.Writer) *report {
	return &report{out: out, pending: map[testID][]string{}, skipped: map[testID]string{}}
}

// read consumes the stream. A line that is not an event (the go command's own messages on
// standard error, when both are piped here) is printed as it is.
func (r *report) read(in io.Reader) error {
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for scanner.Scan() {
		line := scanner.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintln(r.out, string(line))
			continue
		}
		r.sawEvents = true
		r.handle(e)
	}
	return scanner.Err()
}

func (r *report) handle(e event) {
	id := testID{e.Package, e.Test}
	switch e.Action {
	case "output":
		r.pending[id] = append(r.pending[id], e.Output)
	case "build-output":
		fmt.Fprint(r.out, e.Output)
	case "pass":
		r.testPassed(id)
	case "fail":
		r.testFailed(id)
	case "skip":
		r.testSkipped(id)
	}
}

func (r *report) testPassed(id testID) {
	if id.Test == "" {
		r.printPackageLine(id.Package)
		return
	}
	r.passed++
	delete(r.pending, id)
}

func (r *report) testFailed(id testID) {
	if id.Test != "" {
		r.failed++
		r.print(id)
		return
	}
	// A package that failed may have tests that never ended (a timeout, a panic, os.Exit):
	// their output is what tells why.
	for other := range r.pending {
		if other.Package == id.Package && other.Test != "" {
			r.print(other)
		}
	}
	r.failedPackages = append(r.failedPackages, id.Package)
	r.print(id)
}

func (r *report) testSkipped(id testID) {
	if id.Test == "" { // a package without tests
		r.printPackageLine(id.Package)
		return
	}
	r.skipped[id] = skipReason(r.pending[id])
	delete(r.pending, id)
}

// printPackageLine prints the package's closing line ("ok  pkg 1.2s", "?  pkg [no test files]").
func (r *report) printPackageLine(pkg string) {
	id := testID{Package: pkg}
	for _, line := range r.pending[id] {
		if !strings.HasPrefix(line, "PASS") {
			fmt.Fprint(r.out, line)
		}
	}
	delete(r.pending, id)
}

func (r *report) print(id testID) {
	for _, line := range r.pending[id] {
		fmt.Fprint(r.out, line)
	}
	delete(r.pending, id)
}

// skipReason is what the test said when it skipped: its output less the "--- SKIP" line.
func skipReason(output []string) string {
	var reason []string
	for _, line := range output {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "=== ") || strings.HasPrefix(line, "--- SKIP") {
			continue
		}
		reason = append(reason, line)
	}
	return strings.Join(reason, " ")
}

// finish prints the skips and the closing line, and reports whether the run passed: no test or
// package failed, the stream held events, and, when strict, every skip is allowed.
func (r *report) finish(allowed map[testID]bool, strict bool) bool {
	ok := r.failed == 0 && len(r.failedPackages) == 0
	if !r.sawEvents {
		fmt.Fprintln(r.out, "testreport: no go test -json events on standard input")
		ok = false
	}
	for _, id := range sortedIDs(r.skipped) {
		verdict := "allowed"
		if !allowed[id] {
			verdict = "NOT ALLOWED (add it to the allowed skips, with why, or make it run)"
			if strict {
				ok = false
			}
		}
		fmt.Fprintf(r.out, "SKIP %s %s: %s [%s]\n", id.Package, id.Test, r.skipped[id], verdict)
	}
	for _, pkg := range r.failedPackages {
		fmt.Fprintf(r.out, "FAIL %s\n", pkg)
	}
	fmt.Fprintf(r.out, "tests: %d passed, %d failed, %d skipped\n", r.passed, r.failed, len(r.skipped))
	return ok
}

func sortedIDs(m map[testID]string) []testID {
	ids := make([]testID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if ids[i].Package != ids[j].Package {
			return ids[i].Package < ids[j].Package
		}
		return ids[i].Test < ids[j].Test
	})
	return ids
}

// parseAllowedLine reads "PACKAGE TEST  # why"; blank and comment lines name nothing.
func parseAllowedLine(line string) (testID, bool, error) {
	if i := strings.Index(line, "#"); i >= 0 {
		line = line[:i]
	}
	fields := strings.Fields(line)
	switch len(fields) {
	case 0:
		return testID{}, false, nil
	case 2:
		return testID{fields[0], fields[1]}, true, nil
	}
	return testID{}, false, fmt.Errorf("want \"PACKAGE TEST\", got %q", strings.TrimSpace(line))
}
