//go:build !unix

package task_test

// cpuTime is not measured here: the cpu-ns/step metric reads 0.
func cpuTime() int64 { return 0 }
