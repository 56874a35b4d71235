package partition_test

import (
	"fmt"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/partition"
	"github.com/zkflow/zkflow/task"
)

// Every write a member's join, item locks and leave sends, cut off with its reply lost (applied), the
// session back through a member that has not applied it, the call's
// deadline passing meanwhile: the session leaves no node of its own
// behind, and another client then joins (sim.CutSweep).
func TestCutSweep(t *testing.T) {
	sim.RunSweeps(t, cutSweeps(t))
}

func cutSweeps(t *testing.T) map[string]sim.CutSweep {
	p, err := partition.New("/part", []string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	take := func(i int) task.Task[*partition.Member] { return p.Join(fmt.Sprint("m", i), nil) }
	give := func(m *partition.Member) task.Task[task.Unit] { return m.Leave() }
	return map[string]sim.CutSweep{
		"join and leave":           {History: sim.TakeGive[*partition.Member]{Dir: "/part", Take: take, Give: give}.History},
		"join and leave contended": {History: sim.TakeGive[*partition.Member]{Dir: "/part", Take: take, Give: give, Contended: true}.History},
	}
}
