// Package canary switches known recipe bugs back on, for tests only: each
// recipe checks On(name) at the place where the bug would be, and a test
// (the simulation's canary suite) enables one bug at a time to show the
// simulation catches it. Nothing outside this module can import it, and
// with nothing enabled On is one atomic load.
package canary

import "sync/atomic"

// Name names one known bug.
type Name string

var enabled atomic.Pointer[map[Name]bool]

// On reports whether bug n is switched on.
func On(n Name) bool {
	m := enabled.Load()
	return m != nil && (*m)[n]
}

// Enable switches the named bugs on (and every other one off) until
// restore is called. Tests that enable canaries must not run in parallel
// with tests that expect correct recipes.
func Enable(names ...Name) (restore func()) {
	m := make(map[Name]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	prev := enabled.Swap(&m)
	return func() { enabled.Store(prev) }
}
