package barrier_test

import (
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/barrier"
	"github.com/zkflow/zkflow/task"
)

// Every write a double barrier's enter and leave sends, cut off with its reply lost (applied), the
// session back through a member that has not applied it, the call's
// deadline passing meanwhile: the session leaves no node of its own
// behind, and another client then enters (sim.CutSweep).
func TestCutSweep(t *testing.T) {
	sim.RunSweeps(t, cutSweeps(t))
}

func cutSweeps(t *testing.T) map[string]sim.CutSweep {
	one, err := barrier.NewDouble("/db1", 1)
	if err != nil {
		t.Fatal(err)
	}
	two, err := barrier.NewDouble("/db2", 2)
	if err != nil {
		t.Fatal(err)
	}
	give := func(p *barrier.Participant) task.Task[task.Unit] { return p.Leave() }
	return map[string]sim.CutSweep{
		"enter and leave": {History: sim.TakeGive[*barrier.Participant]{Dir: "/db1", Take: func(int) task.Task[*barrier.Participant] { return one.Enter() }, Give: give}.History},
		// Client 1 passes alone, through a barrier of its own: client 0's
		// enter waits for a second participant and ends at its deadline.
		"enter that waits": {History: sim.TakeGive[*barrier.Participant]{Dir: "/db2", Take: func(i int) task.Task[*barrier.Participant] {
			if i == 1 {
				return one.Enter()
			}
			return two.Enter()
		}, Give: give}.History},
	}
}
