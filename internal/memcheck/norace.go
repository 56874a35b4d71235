//go:build !race

package memcheck

const cycles = 20_000
