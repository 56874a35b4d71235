package lock

import (
	"fmt"

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
	task.Run(a.s, zkops.DeleteMine(a.path), func(_ task.Unit, err error) {
		if err != nil {
			a.fail(err)
			return
		}
		a.path, a.name, a.seq, a.stat = "", "", 0, task.Stat{}
		a.afterReset()
	})
}

// tryAfterReset is what a TryAcquire does instead of afterReset: it
// goes on only if the directory's counter can name nodes again at once
// (the directory gone or emptied now), and fails with ErrBusy when any
// node is in it (a contender, another client's kind of lock node, a
// stray), which afterReset would wait for.
func (a *attempt) tryAfterReset() {
	task.Run(a.s, zkops.TryEmptyDir(a.l.dir), func(free bool, err error) {
		switch {
		case err != nil:
			a.fail(err)
		case !free:
			a.fail(fmt.Errorf("lock: %w: the directory's sequence counter is exhausted and %s is not empty", ErrBusy, a.l.dir))
		default:
			a.create()
		}
	})
}

// afterReset creates our node again once the directory has been emptied
// and recreated (its counter back at zero). It is also where a create
// that clashed (NodeExists: the counter stuck at its maximum named our
// node as an earlier one with our prefix) goes. A TryAcquire does not
// wait: tryAfterReset.
func (a *attempt) afterReset() {
	if a.try {
		a.tryAfterReset()
		return
	}
	task.Run(a.s, zkops.EmptyDir(a.l.dir), func(_ task.Unit, err error) {
		if err != nil {
			a.fail(err)
			return
		}
		a.create()
	})
}
