package semaphore_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/semaphore"
	"github.com/zkflow/zkflow/task"
)

// Every write a semaphore's acquire and release sends, cut off with its reply lost (applied), the
// session back through a member that has not applied it, the call's
// deadline passing meanwhile: the session leaves no node of its own
// behind, and another client then acquires (sim.CutSweep).
func TestCutSweep(t *testing.T) {
	sim.RunSweeps(t, cutSweeps(t))
}

func cutSweeps(t *testing.T) map[string]sim.CutSweep {
	m, err := semaphore.New("/sem", 1)
	if err != nil {
		t.Fatal(err)
	}
	take := func(int) task.Task[*semaphore.Lease] { return m.Acquire() }
	try := func(int) task.Task[*semaphore.Lease] { return m.TryAcquire() }
	give := func(l *semaphore.Lease) task.Task[task.Unit] { return l.Release() }
	return map[string]sim.CutSweep{
		"acquire":           {History: sim.TakeGive[*semaphore.Lease]{Dir: "/sem", Take: take, Give: give}.History},
		"acquire contended": {History: sim.TakeGive[*semaphore.Lease]{Dir: "/sem", Take: take, Give: give, Contended: true}.History},
		"try":               {History: sim.TakeGive[*semaphore.Lease]{Dir: "/sem", Take: try, Give: give}.History},
		"try contended":     {History: sim.TakeGive[*semaphore.Lease]{Dir: "/sem", Take: try, Give: give, Contended: true}.History},
	}
}
