package discovery_test

import (
	"fmt"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/discovery"
	"github.com/zkflow/zkflow/task"
)

// Every write a registration and its unregistration sends, cut off with its reply lost (applied), the
// session back through a member that has not applied it, the call's
// deadline passing meanwhile: the session leaves no node of its own
// behind, and another client then registers (sim.CutSweep).
func TestCutSweep(t *testing.T) {
	sim.RunSweeps(t, cutSweeps(t))
}

func cutSweeps(t *testing.T) map[string]sim.CutSweep {
	d, err := discovery.New("/disc")
	if err != nil {
		t.Fatal(err)
	}
	take := func(i int) task.Task[*discovery.Registration] {
		return d.Register(discovery.Instance{Name: "web", ID: fmt.Sprint("i", i), Address: "h", Port: 80})
	}
	same := func(int) task.Task[*discovery.Registration] {
		return d.Register(discovery.Instance{Name: "web", ID: "i", Address: "h", Port: 80})
	}
	give := func(r *discovery.Registration) task.Task[task.Unit] { return r.Unregister() }
	return map[string]sim.CutSweep{
		"register and unregister": {History: sim.TakeGive[*discovery.Registration]{Dir: "/disc", Take: take, Give: give}.History},
		"one id":                  {History: sim.TakeGive[*discovery.Registration]{Dir: "/disc", Take: same, Give: give}.History},
		"one id contended":        {History: sim.TakeGive[*discovery.Registration]{Dir: "/disc", Take: same, Give: give, Contended: true}.History},
	}
}
