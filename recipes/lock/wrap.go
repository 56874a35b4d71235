package lock

import (
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Sequence wrap-around: see zkops.Exhausted (wrap.go there) for what the
// server does once a directory's counter runs out and what the queue
// recipes do about it.

// restart withdraws a contender with an exhausted number and starts the
// attempt again once the directory has been emptied and recreated.
func (a *attempt) restart() {
	node := a.l.child(a.name)
	task.Run(a.s, zkops.Delete(node), func(_ task.Unit, err error) {
		if err != nil {
			a.fail(err)
			return
		}
		a.name, a.seq, a.stat = "", 0, task.Stat{}
		a.afterReset()
	})
}

// afterReset creates our node again once the directory has been emptied
// and recreated (its counter back at zero). It is also where a create
// that clashed (NodeExists: the counter stuck at its maximum named our
// node as an earlier one with our prefix) goes.
func (a *attempt) afterReset() {
	task.Run(a.s, zkops.EmptyDir(a.l.dir), func(_ task.Unit, err error) {
		if err != nil {
			a.fail(err)
			return
		}
		a.create()
	})
}
