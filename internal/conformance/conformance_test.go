package conformance

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestCasesWellFormed checks the table itself: unique names, a group
// prefix, a stated behaviour and a body for every case. (The cases run
// against targets in the packages that provide them: fakezk, zkadapter.)
func TestCasesWellFormed(t *testing.T) {
	cs := Cases()
	if len(cs) < 150 {
		t.Fatalf("%d cases, want at least 150", len(cs))
	}
	seen := map[string]bool{}
	for _, c := range cs {
		if seen[c.Name] {
			t.Errorf("duplicate case %q", c.Name)
		}
		seen[c.Name] = true
		if !strings.Contains(c.Name, "/") || c.Checks == "" || c.Run == nil {
			t.Errorf("case %q malformed", c.Name)
		}
	}
}
