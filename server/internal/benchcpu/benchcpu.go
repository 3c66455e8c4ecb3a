// Package benchcpu reports a benchmark's CPU time per operation: the whole process's (the code
// measured and the goroutines it hands work to, such as the store's committer), steadier than
// ns/op on a shared machine.
package benchcpu

import (
	"syscall"
	"testing"
	"time"
)

// Report starts measuring the process's CPU time; the function it returns reports it per op as
// cpu-µs/op. Call it before the benchmark's loop, and defer what it returns.
func Report(b *testing.B) func() { return ReportPer(b, "op") }

// ReportPer is Report with the unit an op is ("write": cpu-µs/write).
func ReportPer(b *testing.B, unit string) func() {
	start := processTime()
	return func() { b.ReportMetric(float64((processTime()-start).Microseconds())/float64(b.N), "cpu-µs/"+unit) }
}

func processTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
