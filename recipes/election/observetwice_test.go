package election_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/recipes/election"
)

// A task is a description of work: running it twice does the work twice
// (package task). The task Observe returns, run a second time (after the
// first observer was stopped, and beside it), must start a second
// observer of its own that sees the leader, not fail because the first
// run's cache was started already, nor hand back the first run's
// Observer.
func TestObserveTaskRunTwice(t *testing.T) {
	for _, kind := range []string{"election", "master"} {
		t.Run(kind, func(t *testing.T) {
			w, _ := newWorld(t, 1, 2, fakezk.Config{})
			var cand election.Candidate = mustElection(t, "/e", election.WithData([]byte("a")))
			if kind == "master" {
				cand = mustMaster(t, "/m", "a")
			}
			l, err := mustRun(t, w, 0, cand.Campaign())
			if err != nil {
				t.Fatal(err)
			}
			var seen []election.Observation
			observe := cand.Observe(func(ob election.Observation) { seen = append(seen, ob) })
			o1, err := mustRun(t, w, 1, observe)
			if err != nil {
				t.Fatal(err)
			}
			o2, err := mustRun(t, w, 1, observe) // beside the first
			if err != nil {
				t.Fatalf("the observe task run a second time: %v", err)
			}
			if o1 == o2 {
				t.Fatal("the second run handed back the first run's Observer")
			}
			if _, err := mustRun(t, w, 1, o1.Stop()); err != nil {
				t.Fatal(err)
			}
			o3, err := mustRun(t, w, 1, observe) // after the first was stopped
			if err != nil {
				t.Fatalf("the observe task run a third time: %v", err)
			}
			w.Settle(func() bool { return false })
			if len(seen) != 3 {
				t.Fatalf("observations %+v, want the leader once for each of three runs", seen)
			}
			for _, ob := range seen {
				if !ob.Leading || ob.Token != l.Token() {
					t.Fatalf("observation %+v, want the leader (token %d)", ob, l.Token())
				}
			}
			for _, o := range []*election.Observer{o2, o3} {
				if _, err := mustRun(t, w, 1, o.Stop()); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := mustRun(t, w, 0, l.Resign()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
