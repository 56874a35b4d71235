package canarytest_test

import (
	"testing"

	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/internal/canary/canarytest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The canary is off in the first run, on in the second, and off again
// after.
func TestBoth(t *testing.T) {
	const name canary.Name = "canarytest/probe"
	var seen []bool
	canarytest.Both(t, name, func(t *testing.T, bug bool) {
		if canary.On(name) != bug {
			t.Errorf("bug %v with the canary on: %v", bug, canary.On(name))
		}
		seen = append(seen, bug)
	})
	if len(seen) != 2 || seen[0] || !seen[1] || canary.On(name) {
		t.Errorf("runs %v, canary on after: %v; want [false true], off", seen, canary.On(name))
	}
}
