package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
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

// The blocking face under the same sweep: a Client's Campaign and Resign,
// and Lead, run in an actor whose context ends on the simulated clock
// while the client is cut off (sim.BlockingTakeGive). Lead's leader holds
// on until its context ends (client 0) or returns at once (client 1).
func TestCutSweepBlocking(t *testing.T) {
	for _, tc := range blockingCutSweeps() {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.sweep.Run(t)
			t.Logf("%d cut points", n)
		})
	}
}

// The blocking sweep reaches the Master cleanup's stale read too.
func TestCutSweepBlockingCatchesUnsyncedMasterCleanup(t *testing.T) {
	defer canary.Enable("election/master-cleanup-unsynced")()
	if err := blockingCutSweeps()[1].sweep.Err(); err == nil {
		t.Fatal("with the cleanup's read unsynced the sweep still passes")
	} else {
		t.Logf("with the cleanup's read unsynced: %v", err)
	}
}

func blockingCutSweeps() []cutSweepCase {
	// clients makes one Client per executor (one per client of a world).
	clients := func(mk func(ex *executor.Executor) (*election.Client, error)) func(a *sim.Actor) (*election.Client, error) {
		made := map[*executor.Executor]*election.Client{}
		return func(a *sim.Actor) (*election.Client, error) {
			if cl := made[a.Exec()]; cl != nil {
				return cl, nil
			}
			cl, err := mk(a.Exec())
			made[a.Exec()] = cl
			return cl, err
		}
	}
	campaign := func(dir string, contended bool, mk func(ex *executor.Executor) (*election.Client, error)) sim.CutSweep {
		client := clients(mk)
		return sim.CutSweep{History: sim.BlockingTakeGive[*election.Leadership]{Dir: dir, Contended: contended,
			Take: func(a *sim.Actor, ctx context.Context) (*election.Leadership, error) {
				cl, err := client(a)
				if err != nil {
					return nil, err
				}
				return cl.Campaign(ctx)
			},
			Give: func(a *sim.Actor, ctx context.Context, l *election.Leadership) error {
				cl, err := client(a)
				if err != nil {
					return err
				}
				return cl.Resign(ctx, l)
			},
		}.History}
	}
	elect := func(ex *executor.Executor) (*election.Client, error) { return election.NewClient(ex, "/e") }
	master := func(ex *executor.Executor) (*election.Client, error) {
		return election.NewMasterClient(ex, "/svc/master", election.WithData([]byte("a")))
	}
	lead := clients(elect)
	return []cutSweepCase{
		{"campaign and resign", campaign("/e", false, elect)},
		{"master campaign and resign", campaign("/svc", false, master)},
		{"campaign and resign contended", campaign("/e", true, elect)},
		{"master campaign and resign contended", campaign("/svc", true, master)},
		{"lead", sim.CutSweep{History: sim.BlockingTakeGive[task.Unit]{Dir: "/e",
			Take: func(a *sim.Actor, ctx context.Context) (task.Unit, error) {
				cl, err := lead(a)
				if err != nil {
					return task.Unit{}, err
				}
				return task.Unit{}, cl.Lead(ctx, election.LeadOptions{}, func(lctx context.Context, _ *election.Leadership) error {
					if a.Client() == 0 {
						_ = a.Sleep(lctx, time.Hour) // leads until its context ends
					}
					return nil
				})
			},
			Give: func(*sim.Actor, context.Context, task.Unit) error { return nil },
		}.History}},
	}
}
