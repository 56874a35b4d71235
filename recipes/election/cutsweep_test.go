package election_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/task"
)

// Every write a campaign and its resign send, cut off with its reply lost
// (applied), the session back through a member that has not applied it,
// the call's deadline passing meanwhile: the session leaves no node
// behind, and another candidate then leads (sim.CutSweep).
func TestCutSweep(t *testing.T) {
	for _, tc := range cutSweeps(t) {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.sweep.Run(t)
			t.Logf("%d cut points", n)
		})
	}
}

// The sweep reaches the Master cleanup's stale read.
func TestCutSweepCatchesUnsyncedMasterCleanup(t *testing.T) {
	defer canary.Enable("election/master-cleanup-unsynced")()
	if err := cutSweeps(t)[1].sweep.Err(); err == nil {
		t.Fatal("with the cleanup's read unsynced the sweep still passes")
	} else {
		t.Logf("with the cleanup's read unsynced: %v", err)
	}
}

type cutSweepCase struct {
	name  string
	sweep sim.CutSweep
}

func cutSweeps(t *testing.T) []cutSweepCase {
	e := mustElection(t, "/e")
	m := mustMaster(t, "/svc/master", "a")
	resign := func(l *election.Leadership) task.Task[task.Unit] { return l.Resign() }
	return []cutSweepCase{
		{"election", sim.CutSweep{History: sim.TakeGive[*election.Leadership]{Dir: "/e", Take: func(int) task.Task[*election.Leadership] { return e.Campaign() }, Give: resign}.History}},
		{"master", sim.CutSweep{History: sim.TakeGive[*election.Leadership]{Dir: "/svc", Take: func(int) task.Task[*election.Leadership] { return m.Campaign() }, Give: resign}.History}},
		{"election contended", sim.CutSweep{History: sim.TakeGive[*election.Leadership]{Dir: "/e", Take: func(int) task.Task[*election.Leadership] { return e.Campaign() }, Give: resign, Contended: true}.History}},
		{"master contended", sim.CutSweep{History: sim.TakeGive[*election.Leadership]{Dir: "/svc", Take: func(int) task.Task[*election.Leadership] { return m.Campaign() }, Give: resign, Contended: true}.History}},
	}
}
