//go:build !race

package memcheck

const cycles = 100_000
