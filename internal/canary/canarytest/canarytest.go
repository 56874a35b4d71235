// Package canarytest runs a test with a canary off and on, for the tests
// that show their check fails when the bug it guards against is put
// back (internal/canary).
package canarytest

import (
	"testing"

	"github.com/zkflow/zkflow/internal/canary"
)

// Both runs f as two subtests of t: "fixed", with the canary name off
// (bug false), then "canary", with it switched on for the subtest's
// length (bug true). f checks the fixed behaviour when bug is false and
// that the bug shows when it is true, so that the check can fail.
func Both(t *testing.T, name canary.Name, f func(t *testing.T, bug bool)) {
	t.Helper()
	t.Run("fixed", func(t *testing.T) { f(t, false) })
	t.Run("canary", func(t *testing.T) {
		defer canary.Enable(name)()
		f(t, true)
	})
}
