package discovery

import (
	"errors"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
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
	kept    map[keptUnregister]bool
}

// keptUnregister is a refused delete keepUnregistering goes on with: the
// path and the incarnation (czxid).
type keptUnregister struct {
	path  string
	czxid int64
}

var unregisteringsKey byte

func unregisteringsOf(rt task.Runtime) *unregisterings {
	return task.RuntimeValue(rt, &unregisteringsKey, func() *unregisterings {
		return &unregisterings{n: map[string]int{}, waiting: map[string][]func(){}, kept: map[keptUnregister]bool{}}
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

// keepUnregistering goes on with the Unregister of the persistent node
// at path, incarnation czxid, whose delete an ACL has just refused
// (task.ErrNoAuth), and takes over its count in u: in a flow of its own
// it deletes that incarnation again (zkops.DeleteNode) every
// task.RecheckAfter while the ACL refuses it, on the next session after
// an expiry (no session's end deletes a persistent node), until the
// delete is applied, the node is gone or another, or the executor
// closes; then the count ends (a Register of path waiting for it goes
// on). A group member's refused Leave goes on so too
// (zkops.KeepDeleting), but only while its session lasts, whose end
// deletes its ephemeral node. A refused delete of the same incarnation
// already going on (an Unregister run again) is not doubled. Executor
// goroutine.
func keepUnregistering(rt task.Runtime, u *unregisterings, path string, czxid int64) {
	key := keptUnregister{path, czxid}
	if u.kept[key] {
		u.end(path)
		return
	}
	u.kept[key] = true
	del := zkops.DeleteNode(path, task.Stat{Czxid: czxid})
	var again task.Task[task.Unit]
	again = func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Run(s, c.Sleep(task.RecheckAfter(s.Session().Timeout)), func(_ task.Unit, err error) {
			if err != nil {
				k(task.Unit{}, err)
				return
			}
			task.Run(s, del, func(_ task.Unit, err error) {
				if errors.Is(err, task.ErrNoAuth) {
					again(s, k)
					return
				}
				k(task.Unit{}, err)
			})
		})
	}
	var start func()
	start = func() {
		task.Go(rt.SessionScope(), again, func(_ task.Unit, err error) {
			if errors.Is(err, task.ErrSessionExpired) {
				start() // on the next session (the runtime's session scope now)
				return
			}
			delete(u.kept, key)
			u.end(path)
			if err != nil && !errors.Is(err, task.ErrClosed) {
				rt.Report(err)
			}
		})
	}
	start()
}

// bugRefusedUnregisterDropped: a persistent instance's Unregister whose
// delete an ACL refused fails with the refusal and nothing deletes the
// node after: it stays registered for good once the ACL lets the delete
// (TestRefusedUnregisterDeletesOnceAllowed).
const bugRefusedUnregisterDropped canary.Name = "discovery/refused-unregister-dropped"
