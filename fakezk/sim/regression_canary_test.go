package sim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
)

// A regression seed that names its canary (Regression.Canary) is replayed
// with it on too: Regressions reports nothing while the canary makes the
// seed fail, and reports the seed once the canary no longer does (the
// seed no longer reaches its schedule; here, a canary that plants
// nothing the seed meets).
func TestRegressionCanaryReach(t *testing.T) {
	const planted canary.Name = "sim/regression-reach-test"
	sc := sim.Scenario{
		Name:     "regression-canary",
		Clients:  1,
		Duration: time.Second,
		Live:     func(*sim.Trial) bool { return true },
		Workload: func(r *sim.Trial) {
			if canary.On(planted) {
				r.Errorf("the planted bug")
			}
		},
	}
	for _, tc := range []struct {
		canary string
		want   string // in the one report, "" for none
	}{
		{canary: string(planted)},
		{canary: "sim/plants-nothing-here", want: "passes with its canary sim/plants-nothing-here on"},
		{canary: ""},
	} {
		sc.Regressions = []sim.Regression{{Seed: 7, Canary: tc.canary, Why: "a test"}}
		errs := sim.RegressionErrs(t, []sim.Scenario{sc})
		switch {
		case tc.want == "" && len(errs) != 0:
			t.Errorf("canary %q: %q, want no report", tc.canary, errs)
		case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0], tc.want)):
			t.Errorf("canary %q: %q, want one report with %q", tc.canary, errs, tc.want)
		}
		if canary.On(planted) {
			t.Fatalf("canary %q: %s left on after the replay", tc.canary, planted)
		}
	}
}
