package lock

import (
	"errors"
	"fmt"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Sequence wrap-around: see zkops.Exhausted (wrap.go there) for what the
// server does once a directory's counter runs out and what the queue
// recipes do about it.

// restart withdraws a contender with an exhausted number and starts the
// attempt again once the directory has been emptied and recreated.
//
// A TryAcquire does not wait for the directory to empty: it goes on only
// when no other contender is left after its own node is deleted, and fails
// with ErrBusy otherwise.
func (a *attempt) restart() {
	task.Run(a.s, zkops.Delete(a.path), func(_ task.Unit, err error) {
		if err != nil {
			a.fail(err)
			return
		}
		a.path, a.name, a.seq, a.stat = "", "", 0, task.Stat{}
		a.afterReset()
	})
}

// tryAfterReset is what a TryAcquire does before afterReset: when other
// contenders are in the directory it fails with ErrBusy instead of
// waiting for them to go.
func (a *attempt) tryAfterReset() {
	a.resetChecked = true
	task.Run(a.s, c.Retry(task.Children(a.l.dir), retry), func(cl task.ChildList, err error) {
		switch {
		case errors.Is(err, task.ErrNoNode):
			a.create()
		case err != nil:
			a.fail(err)
		case len(queue(cl.Names)) > 0:
			a.fail(fmt.Errorf("lock: %w: the directory's sequence counter is exhausted and %d contenders are in %s", ErrBusy, len(queue(cl.Names)), a.l.dir))
		default:
			a.afterReset()
		}
	})
}

// afterReset creates our node again once the directory has been emptied
// and recreated (its counter back at zero). It is also where a create
// that clashed (NodeExists: the counter stuck at its maximum named our
// node as an earlier one with our prefix) goes.
func (a *attempt) afterReset() {
	if a.try && !a.resetChecked {
		a.tryAfterReset()
		return
	}
	task.Run(a.s, zkops.EmptyDir(a.l.dir), func(_ task.Unit, err error) {
		if err != nil {
			a.fail(err)
			return
		}
		a.resetChecked = false // a later exhaustion is checked again
		a.create()
	})
}
