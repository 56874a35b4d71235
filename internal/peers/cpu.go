package peers

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time (user and system, every thread) the calling
// process has used since it started, from getrusage(RUSAGE_SELF); 0 if
// the system does not say. Drive reads it at the start and at the end of
// its measuring window, so that a client's CPU per operation leaves out
// its start-up and warm-up.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
