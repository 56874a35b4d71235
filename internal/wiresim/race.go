//go:build race

package wiresim

// perCPU is the number of seeds Parallel runs at once per CPU: the race
// detector multiplies a seed's CPU several times, and a starved client
// loses its session with no fault drawn.
const perCPU = 4
