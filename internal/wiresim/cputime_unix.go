//go:build unix

package wiresim

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the process has used,
// for the seeds per CPU second of the report.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
