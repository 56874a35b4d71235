//go:build unix

package task_test

import "syscall"

// cpuTime is the process's user and system CPU time, in nanoseconds: on a
// shared machine a steadier measure than the wall clock.
func cpuTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
