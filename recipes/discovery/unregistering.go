package discovery

import (
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/task"
)

// unregisterings counts, on one executor (task.RuntimeValue), the
// Unregisters of persistent instances going on there, by path, and holds
// the Registers of the same path waiting for them. A Register that found
// the node of an Unregister still going on there would keep it (replace
// its data) and return, and that Unregister's delete, sent after or
// settled after a lost reply, would then delete it: whatever Client or
// flow runs them, a Register waits until no Unregister of its instance
// goes on on its executor. Executor goroutine only.
type unregisterings struct {
	n       map[string]int      // path: Unregisters going on
	waiting map[string][]func() // path: Registers waiting for them
}

var unregisteringsKey byte

func unregisteringsOf(rt task.Runtime) *unregisterings {
	return task.RuntimeValue(rt, &unregisteringsKey, func() *unregisterings {
		return &unregisterings{n: map[string]int{}, waiting: map[string][]func(){}}
	})
}

// begin counts one Unregister of path.
func (u *unregisterings) begin(path string) { u.n[path]++ }

// end ends one Unregister of path; once none is left, the Registers
// waiting for them go on.
func (u *unregisterings) end(path string) {
	if u.n[path]--; u.n[path] > 0 {
		return
	}
	delete(u.n, path)
	ws := u.waiting[path]
	delete(u.waiting, path)
	for _, w := range ws {
		w()
	}
}

// afterUnregisters returns a task that succeeds once no Unregister of
// path goes on on the flow's executor (at once if none does), or fails
// with the scope's error if it ends first.
func afterUnregisters(path string) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		u := unregisteringsOf(s.Runtime())
		if u.n[path] == 0 {
			k(task.Unit{}, nil)
			return
		}
		task.Suspend(s, k, func(resume task.Cont[task.Unit]) func() {
			// An abandoned wait's resume does nothing; it is dropped
			// from the list with the others at end.
			u.waiting[path] = append(u.waiting[path], func() { resume(task.Unit{}, nil) })
			return nil
		})
	}
}

// bugRegisterBesideUnregister: a Register of a persistent instance does
// not wait for the Unregisters of the same instance going on on its
// executor through another Client or the task face (only for its own
// Client's, blocking.Pending): one of them, its delete sent after
// Register found and kept the node, deletes the registration after
// Register returned
// (TestRegisterOnAnotherClientAfterABackgroundUnregisterStays).
const bugRegisterBesideUnregister canary.Name = "discovery/register-beside-unregister"
