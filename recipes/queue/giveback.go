package queue

import (
	"errors"
	"fmt"

	"github.com/zkflow/zkflow/task"
)

// Giving back what a take took as it ended. A take's delete (at-most-once)
// or move (at-least-once) runs as a flow of its own (detached), so that a
// take canceled or past its deadline while that request is in flight does
// not drop its outcome: if the item was taken after all, it is given back
// (putBack, giveBackOwn) instead of being lost or held until the
// consumer's session ends.

// detached runs t as a flow of its own, not ended with s: while s runs, k
// receives t's outcome; once s has ended (the take was canceled or passed
// its deadline, and its caller has its error), orphan does. t is counted
// in q.settling until it ends, and the give-back orphan starts (putBack,
// giveBackOwn: each counts itself) until that ends.
func detached[T any](q *Queue, s *task.Scope, t task.Task[T], k, orphan func(T, error)) {
	done := q.settling.Add()
	task.Go(s, t, func(v T, err error) {
		defer done()
		if s.Err() != nil {
			orphan(v, err)
			return
		}
		k(v, err)
	})
}

// putBack puts an at-most-once item that a take deleted, but could not
// deliver, back at the end of its priority: a new item with the same data
// (a new name). It was delivered to no one, so it is still delivered at
// most once. A put whose outcome is unknown (a lost connection, an
// expiry) is not sent again, which could queue the item twice: the item
// may be lost, and goes to the executor's error report as an
// *UnknownTakeError with its data, as a take's lost reply does.
func (q *Queue) putBack(s *task.Scope, it Item) {
	done := q.settling.Add()
	task.Go(s, q.PutPriority(it.Data, it.Priority), func(_ string, err error) {
		defer done()
		if err != nil {
			s.Runtime().Report(&UnknownTakeError{Item: it, Err: fmt.Errorf("putting it back, taken as its take ended: %w", err)})
		}
	})
}

// giveBackOwn returns an item its live consumer holds in flight (moved as
// its take ended) to the queue: one multi checks the consumer's marker
// and the directory's epoch, creates the item under its own name (see
// returnName) and deletes the copy. A copy found gone was given back
// already (a lost reply); a marker found gone means the item is returned
// by the others as a dead consumer's.
func (q *Queue) giveBackOwn(s *task.Scope, cn *consumer, it Item) {
	done := q.settling.Add()
	task.Go(s, q.giveBackTask(cn, it), func(_ task.Unit, err error) {
		defer done()
		if err != nil {
			s.Runtime().Report(fmt.Errorf("queue: giving back %s, moved as its take ended: %w", it.Name, err))
		}
	})
}

func (q *Queue) giveBackTask(cn *consumer, it Item) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		copyPath := q.flight(cn.id, it.czxid, it.Name)
		var send func()
		send = func() {
			task.Run(s, q.readDir(), func(ds dirState, err error) {
				if err != nil {
					k(task.Unit{}, err)
					return
				}
				// The copy's own czxid is not known here: a name above
				// the counter's from the item's stands in for it (unique
				// too: czxids are).
				path := q.item(returnName(task.Base(copyPath), it.czxid, ds))
				ops := []task.MultiOp{
					&task.CheckRequest{Path: q.marker(cn.id), Version: 0},
					q.epochCheck(ds.epoch),
					&task.CreateRequest{Path: path, Data: it.Data, Mode: task.Persistent, ACL: q.acl.For(path)},
					&task.DeleteRequest{Path: copyPath, Version: 0},
				}
				task.Run(s, task.Multi(ops...), func(_ []task.MultiResult, err error) {
					switch i := multiIndex(err); {
					case err == nil:
						delete(q.claimed, copyPath)
						k(task.Unit{}, nil)
					case errors.Is(err, task.ErrConnectionLoss), errors.Is(err, task.ErrNotSent):
						send() // applied before: the copy is gone and this fails
					case i == 1 || (i == 2 && errors.Is(err, task.ErrNoNode)):
						q.staleEpoch(ds.epoch)
						send()
					case i == 0, i == 3:
						k(task.Unit{}, nil) // returned by others, or given back already
					default:
						k(task.Unit{}, err)
					}
				})
			})
		}
		send()
	}
}
