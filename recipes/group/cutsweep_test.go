package group_test

import (
	"fmt"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/group"
	"github.com/zkflow/zkflow/task"
)

// Every write a group's join and leave sends, cut off with its reply lost (applied), the
// session back through a member that has not applied it, the call's
// deadline passing meanwhile: the session leaves no node of its own
// behind, and another client then joins (sim.CutSweep).
func TestCutSweep(t *testing.T) {
	sim.RunSweeps(t, cutSweeps(t))
}

func cutSweeps(t *testing.T) map[string]sim.CutSweep {
	g, err := group.New("/g")
	if err != nil {
		t.Fatal(err)
	}
	take := func(i int) task.Task[*group.Member] { return g.Join(fmt.Sprint("m", i), nil) }
	same := func(int) task.Task[*group.Member] { return g.Join("m", nil) }
	give := func(m *group.Member) task.Task[task.Unit] { return m.Leave() }
	return map[string]sim.CutSweep{
		"join and leave":   {History: sim.TakeGive[*group.Member]{Dir: "/g", Take: take, Give: give}.History},
		"one id":           {History: sim.TakeGive[*group.Member]{Dir: "/g", Take: same, Give: give}.History},
		"one id contended": {History: sim.TakeGive[*group.Member]{Dir: "/g", Take: same, Give: give, Contended: true}.History},
	}
}
