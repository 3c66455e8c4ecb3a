package main

import (
	"runtime/debug"
	"testing"
)

// TestSetDefaultGCPercent checks that the server collects garbage at defaultGCPercent unless
// GOGC says otherwise.
func TestSetDefaultGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	setDefaultGCPercent([]string{"GOGC=100", "HOME=/"})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set: GC percent %d, want the environment's 100", got)
	}
	setDefaultGCPercent([]string{"HOME=/", "SQLKUBE_GOGC=50"})
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("without GOGC: GC percent %d, want %d", got, defaultGCPercent)
	}
}
