package main

import (
	"strings"
	"testing"
)

// stream is a `go test -json` run: two packages, one passing test, one failing subtest, two
// skipped tests, a package without tests.
const stream = `{"Action":"start","Package":"ex/a"}
{"Action":"run","Package":"ex/a","Test":"TestOK"}
{"Action":"output","Package":"ex/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"output","Package":"ex/a","Test":"TestOK","Output":"    ok_test.go:9: noise\n"}
{"Action":"pass","Package":"ex/a","Test":"TestOK"}
{"Action":"run","Package":"ex/a","Test":"TestBench"}
{"Action":"output","Package":"ex/a","Test":"TestBench","Output":"=== RUN   TestBench\n"}
{"Action":"output","Package":"ex/a","Test":"TestBench","Output":"    bench_test.go:3: a benchmark: set X=1\n"}
{"Action":"output","Package":"ex/a","Test":"TestBench","Output":"--- SKIP: TestBench (0.00s)\n"}
{"Action":"skip","Package":"ex/a","Test":"TestBench"}
{"Action":"output","Package":"ex/a","Output":"PASS\n"}
{"Action":"output","Package":"ex/a","Output":"ok  \tex/a\t0.1s\n"}
{"Action":"pass","Package":"ex/a"}
{"Action":"run","Package":"ex/b","Test":"TestDB/postgres"}
{"Action":"output","Package":"ex/b","Test":"TestDB/postgres","Output":"    db_test.go:5: PostgreSQL not reachable\n"}
{"Action":"skip","Package":"ex/b","Test":"TestDB/postgres"}
{"Action":"output","Package":"ex/b","Test":"TestDB/sqlite","Output":"    db_test.go:7: want 1, got 2\n"}
{"Action":"fail","Package":"ex/b","Test":"TestDB/sqlite"}
{"Action":"fail","Package":"ex/b","Test":"TestDB"}
{"Action":"output","Package":"ex/b","Output":"FAIL\tex/b\t0.2s\n"}
{"Action":"fail","Package":"ex/b"}
{"Action":"output","Package":"ex/c","Output":"?   \tex/c\t[no test files]\n"}
{"Action":"skip","Package":"ex/c"}
`

func run(t *testing.T, input, allowedSkips string, strict bool) (string, bool) {
	t.Helper()
	allowed, err := parseAllowedSkips(strings.NewReader(allowedSkips))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	r := newReport(&out)
	if err := r.read(strings.NewReader(input)); err != nil {
		t.Fatal(err)
	}
	ok := r.finish(allowed, strict)
	return out.String(), ok
}

func TestReportPrintsFailuresSkipsAndCounts(t *testing.T) {
	out, ok := run(t, stream, "", false)
	if ok {
		t.Error("a run with a failed test passed")
	}
	for _, want := range []string{
		"ok  \tex/a\t0.1s\n",
		"    db_test.go:7: want 1, got 2\n",
		"FAIL\tex/b\t0.2s\n",
		"?   \tex/c\t[no test files]\n",
		"SKIP ex/a TestBench: bench_test.go:3: a benchmark: set X=1 [NOT ALLOWED",
		"SKIP ex/b TestDB/postgres: db_test.go:5: PostgreSQL not reachable [NOT ALLOWED",
		"\ntests: 1 passed, 2 failed, 2 skipped\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "noise") {
		t.Errorf("a passed test's output was printed:\n%s", out)
	}
}

func TestStrictFailsOnSkipsNotAllowed(t *testing.T) {
	passing := strings.ReplaceAll(stream, `"Action":"fail"`, `"Action":"pass"`)
	allowAll := "ex/a TestBench  # a benchmark\nex/b TestDB/postgres\n"
	for _, c := range []struct {
		name    string
		allowed string
		strict  bool
		want    bool
	}{
		{"not strict", "", false, true},
		{"strict, none allowed", "", true, false},
		{"strict, one of two allowed", "ex/a TestBench\n", true, false},
		{"strict, both allowed", allowAll, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if out, ok := run(t, passing, c.allowed, c.strict); ok != c.want {
				t.Errorf("passed = %v, want %v:\n%s", ok, c.want, out)
			}
		})
	}
}

func TestEmptyStreamFails(t *testing.T) {
	out, ok := run(t, "go: cannot find main module\n", "", false)
	if ok || !strings.Contains(out, "go: cannot find main module") {
		t.Errorf("passed = %v, output:\n%s", ok, out)
	}
}

func TestTestsOfAFailedPackageThatNeverEndedArePrinted(t *testing.T) {
	in := `{"Action":"output","Package":"ex/a","Test":"TestHang","Output":"    hang_test.go:1: waiting\n"}
{"Action":"output","Package":"ex/a","Output":"panic: test timed out after 1s\n"}
{"Action":"fail","Package":"ex/a"}
`
	out, ok := run(t, in, "", false)
	if ok || !strings.Contains(out, "hang_test.go:1: waiting") || !strings.Contains(out, "panic: test timed out") {
		t.Errorf("passed = %v, output:\n%s", ok, out)
	}
}

func TestAllowedSkipsFormat(t *testing.T) {
	if _, err := parseAllowedSkips(strings.NewReader("ex/a\n")); err == nil {
		t.Error("a line without a test name was accepted")
	}
	got, err := parseAllowedSkips(strings.NewReader("# comment\n\nex/a TestX/sub  # why\n"))
	if err != nil || len(got) != 1 || !got[testID{"ex/a", "TestX/sub"}] {
		t.Errorf("got %v, %v", got, err)
	}
}
