package lock_test

import (
	"context"
	"testing"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// Every write a lock's acquire and release sends, cut off with its reply lost (applied), the
// session back through a member that has not applied it, the call's
// deadline passing meanwhile: the session leaves no node of its own
// behind, and another client then acquires (sim.CutSweep).
func TestCutSweep(t *testing.T) {
	sim.RunSweeps(t, cutSweeps(t))
}

func cutSweeps(t *testing.T) map[string]sim.CutSweep {
	l, err := lock.New("/l")
	if err != nil {
		t.Fatal(err)
	}
	take := func(int) task.Task[*lock.Held] { return l.Acquire() }
	try := func(int) task.Task[*lock.Held] { return l.TryAcquire() }
	give := func(h *lock.Held) task.Task[task.Unit] { return h.Release() }
	return map[string]sim.CutSweep{
		"acquire":           {History: sim.TakeGive[*lock.Held]{Dir: "/l", Take: take, Give: give}.History},
		"acquire contended": {History: sim.TakeGive[*lock.Held]{Dir: "/l", Take: take, Give: give, Contended: true}.History},
		"try":               {History: sim.TakeGive[*lock.Held]{Dir: "/l", Take: try, Give: give}.History},
		"try contended":     {History: sim.TakeGive[*lock.Held]{Dir: "/l", Take: try, Give: give, Contended: true}.History},
	}
}

// The blocking face under the same sweep: a Client's Acquire (and
// TryAcquire) and Release run in an actor whose context ends on the
// simulated clock while the client is cut off (sim.BlockingTakeGive).
func TestCutSweepBlocking(t *testing.T) {
	sim.RunSweeps(t, blockingCutSweeps())
}

func blockingCutSweeps() map[string]sim.CutSweep {
	sweep := func(try, contended bool) sim.CutSweep {
		made := map[*executor.Executor]*lock.Client{}
		client := func(a *sim.Actor) (*lock.Client, error) {
			if cl := made[a.Exec()]; cl != nil {
				return cl, nil
			}
			cl, err := lock.NewClient(a.Exec(), "/l")
			made[a.Exec()] = cl
			return cl, err
		}
		return sim.CutSweep{History: sim.BlockingTakeGive[*lock.Held]{Dir: "/l", Contended: contended,
			Take: func(a *sim.Actor, ctx context.Context) (*lock.Held, error) {
				cl, err := client(a)
				if err != nil {
					return nil, err
				}
				if try && a.Client() == 0 {
					return cl.TryAcquire(ctx)
				}
				return cl.Acquire(ctx)
			},
			Give: func(a *sim.Actor, ctx context.Context, h *lock.Held) error {
				cl, err := client(a)
				if err != nil {
					return err
				}
				return cl.Release(ctx, h)
			},
		}.History}
	}
	return map[string]sim.CutSweep{
		"acquire":           sweep(false, false),
		"acquire contended": sweep(false, true),
		"try":               sweep(true, false),
		"try contended":     sweep(true, true),
	}
}
