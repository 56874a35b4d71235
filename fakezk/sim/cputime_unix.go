//go:build unix

package sim

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the process has used
// so far, for the report's seeds per CPU second: on a shared machine the
// wall time of a scenario says more about the other processes than about
// the scenario.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
