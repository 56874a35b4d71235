//go:build !unix

package config

// cpuTime is not measured here: the cpu-ns/op metric reads 0.
func cpuTime() int64 { return 0 }
