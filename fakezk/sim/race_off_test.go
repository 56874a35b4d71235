//go:build !race

package sim_test

// raceOn reports whether the tests run under the race detector.
const raceOn = false
