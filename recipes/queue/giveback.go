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
// its deadline, and its caller has its error), orphan does.
func detached[T any](s *task.Scope, t task.Task[T], k, orphan func(T, error)) {
	task.Go(s, t, func(v T, err error) {
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
// most once. Its failure (an unknown outcome: the item may be lost) goes
// to the executor's error report.
func (q *Queue) putBack(s *task.Scope, it Item) {
	task.Go(s, q.PutPriority(it.Data, it.Priority), func(_ string, err error) {
		if err != nil {
			s.Runtime().Report(fmt.Errorf("queue: putting back %s, taken as its take ended: %w", it.Name, err))
		}
	})
}

// giveBackOwn returns an item its live consumer holds in flight (moved as
// its take ended) to the queue: one multi checks the consumer's marker,
// creates the item under its own name and deletes the copy. If the name
// is taken (the counter handed it out again), the item goes to the end of
// its priority instead (a sequential create). A copy found gone was given
// back already (a lost reply); a marker found gone means the item is
// returned by the others as a dead consumer's.
func (q *Queue) giveBackOwn(s *task.Scope, cn *consumer, it Item) {
	task.Go(s, q.giveBackTask(cn, it), func(_ task.Unit, err error) {
		if err != nil {
			s.Runtime().Report(fmt.Errorf("queue: giving back %s, moved as its take ended: %w", it.Name, err))
		}
	})
}

func (q *Queue) giveBackTask(cn *consumer, it Item) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		copyPath := q.flight(cn.id, it.czxid, it.Name)
		var send func(seq bool)
		send = func(seq bool) {
			create := &task.CreateRequest{Path: q.item(it.Name), Data: it.Data, Mode: task.Persistent}
			if seq {
				create = &task.CreateRequest{Path: q.item(prefix(it.Priority)), Data: it.Data, Mode: task.PersistentSequential}
			}
			create.ACL = q.acl.For(create.Path)
			ops := []task.MultiOp{
				&task.CheckRequest{Path: q.marker(cn.id), Version: 0},
				create,
				&task.DeleteRequest{Path: copyPath, Version: 0},
			}
			task.Run(s, task.Multi(ops...), func(_ []task.MultiResult, err error) {
				switch i := multiIndex(err); {
				case err == nil:
					delete(q.claimed, copyPath)
					k(task.Unit{}, nil)
				case errors.Is(err, task.ErrConnectionLoss), errors.Is(err, task.ErrNotSent):
					send(seq) // applied before: the copy is gone and this fails
				case i == 1 && errors.Is(err, task.ErrNodeExists) && !seq:
					send(true)
				case i == 1 && errors.Is(err, task.ErrNoNode):
					task.Run(s, q.ensureDir(), func(_ task.Unit, err error) {
						if err != nil {
							k(task.Unit{}, err)
							return
						}
						send(seq)
					})
				case i == 0, i == 2:
					k(task.Unit{}, nil) // returned by others, or given back already
				default:
					k(task.Unit{}, err)
				}
			})
		}
		send(false)
	}
}
