//go:build race

package memcheck

// Under the race detector a cycle is about ten times slower.
const cycles = 10_000
