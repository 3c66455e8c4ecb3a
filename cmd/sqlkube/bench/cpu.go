package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ProcessCPU is the user and system CPU time process pid has used so far, from /proc (Linux).
func ProcessCPU(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name (in parentheses, and free to hold spaces): utime and
	// stime are the 12th and 13th, in clock ticks of 1/100 s.
	unexpected := fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	end := strings.LastIndexByte(string(stat), ')')
	if end < 0 {
		return 0, unexpected
	}
	fields := strings.Fields(string(stat[end+1:]))
	if len(fields) < 13 {
		return 0, unexpected
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, unexpected
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// serverCPU is the CPU time the processes --server-pid names have used so far together.
func (b *bench) serverCPU() (time.Duration, error) {
	var total time.Duration
	for _, pid := range b.opts.serverPIDs {
		cpu, err := ProcessCPU(pid)
		if err != nil {
			return 0, err
		}
		total += cpu
	}
	return total, nil
}

// setServerCPU sets rep's server CPU per operation from used, the --server-pid processes' CPU
// over the measured part; without --server-pid, none.
func (b *bench) setServerCPU(rep *report, used time.Duration) {
	if len(b.opts.serverPIDs) > 0 && rep.Ops > 0 {
		perOp := float64(used.Microseconds()) / float64(rep.Ops)
		rep.ServerCPUMicrosPerOp = &perOp
	}
}
