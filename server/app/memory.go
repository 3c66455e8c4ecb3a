package app

import "runtime/debug"

// releaseStartMemory gives the system back what only the start used, once the server has
// started. Building the built-ins' TypeConverter (at the first write of a built-in) from kube's
// definitions of every type leaves ~45 MiB of garbage that the runtime would otherwise keep
// until its periodic collection two minutes later (docs/benchmarks.md, "Memory after start").
func releaseStartMemory() {
	debug.FreeOSMemory()
}
