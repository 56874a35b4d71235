package lock_test

import (
	"fmt"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/lock"
	"github.com/zkflow/zkflow/task"
)

// Every write a lock's acquire and release sends, cut off with its reply lost (applied), the
// session back through a member that has not applied it, the call's
// deadline passing meanwhile: the session leaves no node of its own
// behind, and another client then acquires (sim.CutSweep).
func TestCutSweep(t *testing.T) {
	for name, sweep := range cutSweeps(t) {
		t.Run(name, func(t *testing.T) { t.Logf("%d cut points", sweep.Run(t)) })
	}
}

var _ = fmt.Sprint

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
