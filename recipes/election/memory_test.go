package election_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/internal/memcheck"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// A long-lived session's memory is flat however many terms it leads:
// memcheck.Cycles campaign/resign cycles on one session, of the
// sequential election and of Master, leave the live scope count under the
// session scope where it was after the warm-up and the live heap within
// memcheck.Bound of it. A term resigns at once, or once its node watch is
// set and it was asked whether it leads (IsLeader, Err).
func TestMemoryFlatCampaignResign(t *testing.T) {
	for _, tc := range []struct {
		name     string
		campaign task.Task[*election.Leadership]
		ask      bool
	}{
		{"election", mustElection(t, "/mem/election").Campaign(), false},
		{"election/asked", mustElection(t, "/mem/election").Campaign(), true},
		{"master", mustMaster(t, "/mem/master", "m").Campaign(), false},
		{"master/asked", mustMaster(t, "/mem/master", "m").Campaign(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, _ := newWorld(t, 1, 1, fakezk.Config{})
			memcheck.Check(t, w.Execs[0].SessionScope().Descendants, func(int) {
				l, err := mustRun(t, w, 0, tc.campaign)
				if err != nil {
					t.Fatal(err)
				}
				if tc.ask {
					w.Drive() // the node watch is set
					if !l.IsLeader() || l.Err() != nil {
						t.Fatalf("fresh term: leader %v, err %v", l.IsLeader(), l.Err())
					}
				}
				if _, err := mustRun(t, w, 0, l.Resign()); err != nil {
					t.Fatal(err)
				}
			})
			noReportedErrors(t, w)
		})
	}
}
