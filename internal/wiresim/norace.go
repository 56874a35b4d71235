//go:build !race

package wiresim

// perCPU is the number of seeds Parallel runs at once per CPU: a seed
// spends most of its time waiting on the real clock.
const perCPU = 24
