// Command testreport reads `go test -json` on standard input and prints what a person reads of a
// plain `go test`: each package's result, the whole output of every failed test, and every
// skipped test with its reason, then one closing line, "tests: N passed, N failed, N skipped".
//
// With --strict (CI), a skipped test that --allowed-skips does not name is a failure: a test that
// did not run proves nothing, so each skip that CI accepts is listed and argued in that file.
//
//	go test ./... -json | go run ./cmd/testreport --allowed-skips .ci/allowed-skips --strict
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"
)

func main() {
	allowedFile := pflag.String("allowed-skips", "", "file of skips that are not failures: lines \"PACKAGE TEST\", # starts a comment")
	strict := pflag.Bool("strict", false, "a skip not in --allowed-skips fails the run (CI)")
	pflag.Parse()
	allowed, err := readAllowedSkips(*allowedFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	r := newReport(os.Stdout)
	if err := r.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testreport: reading go test -json:", err)
		os.Exit(2)
	}
	if !r.finish(allowed, *strict) {
		os.Exit(1)
	}
}

// readAllowedSkips reads the list of accepted skips; no file names none.
func readAllowedSkips(path string) (map[testID]bool, error) {
	allowed := map[testID]bool{}
	if path == "" {
		return allowed, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseAllowedSkips(f)
}

func parseAllowedSkips(r io.Reader) (map[testID]bool, error) {
	allowed := map[testID]bool{}
	scanner := bufio.NewScanner(r)
	for n := 1; scanner.Scan(); n++ {
		id, ok, err := parseAllowedLine(scanner.Text())
		if err != nil {
			return nil, fmt.Errorf("allowed skips, line %d: %w", n, err)
		}
		if ok {
			allowed[id] = true
		}
	}
	return allowed, scanner.Err()
}
