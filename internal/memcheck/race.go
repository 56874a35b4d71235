//go:build race

package memcheck

// Under the race detector a cycle is about thirteen times slower.
const cycles = 10_000
