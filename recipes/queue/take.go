package queue

import (
	"errors"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// takeDelete is the at-most-once take: list, sort, and for each item in
// order read it and delete it at the version read; the first delete that
// succeeds is the take. An item found gone (another consumer took it) is
// skipped; when every item of the listing is gone, list again; when the
// directory is empty, list with a children watch and wait for it.
func (q *Queue) takeDelete() task.Task[*Item] {
	return func(s *task.Scope, k task.Cont[*Item]) {
		var round func(watch bool)
		var try func(its []Item, i int)
		round = func(watch bool) {
			task.Run(s, q.list(watch), func(cw task.ChildrenWatch, err error) {
				if err != nil {
					k(nil, err)
					return
				}
				its := ordered(cw.Names)
				switch {
				case len(its) > 0:
					try(its, 0)
				case cw.Watch == nil:
					round(true) // empty: list again, this time with a watch
				default:
					task.Run(s, cw.Watch.Wait(), func(_ task.Event, err error) {
						if err != nil {
							k(nil, err)
							return
						}
						round(false)
					})
				}
			})
		}
		try = func(its []Item, i int) {
			if i == len(its) {
				round(false)
				return
			}
			it := its[i]
			path := q.item(it.Name)
			task.Run(s, c.Retry(task.Get(path), zkops.Retry), func(d task.Data, err error) {
				switch {
				case errors.Is(err, task.ErrNoNode):
					try(its, i+1)
				case err != nil:
					k(nil, err)
				default:
					it.Data, it.czxid = d.Data, d.Stat.Czxid
					detached(s, q.deleteItem(path, d.Stat, &it), func(taken bool, err error) {
						switch {
						case err != nil:
							k(nil, err)
						case taken:
							k(&it, nil)
						default:
							try(its, i+1)
						}
					}, func(taken bool, err error) {
						if taken && err == nil {
							q.putBack(s, it) // taken as the take ended: not lost
						}
					})
				}
			})
		}
		round(false)
	}
}

// deleteItem deletes the incarnation of the item at path that st
// describes (read at st.Version): taken is true if this delete removed
// it, false if it was gone (someone else took it). A delete whose reply
// was lost is settled by the item's incarnation, never sent again by name
// and version alone (a new item put under the same name, once the
// counter has handed it out again, has version 0 too): the node at path
// is read, and if it is the same incarnation (its czxid) the delete was
// not applied and is sent again; if it is gone or another incarnation,
// the item is gone but not who took it, and the take fails with an
// *UnknownTakeError (never delivered: it may have been delivered to
// another consumer).
func (q *Queue) deleteItem(path string, st task.Stat, it *Item) task.Task[bool] {
	return func(s *task.Scope, k task.Cont[bool]) {
		lost := false
		var del, settle func(cause error)
		del = func(error) {
			task.Run(s, task.Delete(path, st.Version), func(_ task.Unit, err error) {
				switch {
				case err == nil:
					k(true, nil)
				case errors.Is(err, task.ErrNoNode), errors.Is(err, task.ErrBadVersion):
					switch {
					case canary.On(bugDeleteNoNodeIsTaken):
						k(true, nil)
					case lost && canary.On(bugLossRetryIsTaken):
						k(true, nil)
					case lost:
						k(false, &UnknownTakeError{Item: *it, Err: err})
					default:
						k(false, nil)
					}
				case errors.Is(err, task.ErrConnectionLoss):
					lost = true
					if canary.On(bugLossRetryIsTaken) || canary.On(bugRetryByVersion) {
						del(err)
						return
					}
					settle(err)
				case errors.Is(err, task.ErrNotSent):
					del(err)
				case errors.Is(err, task.ErrSessionExpired), errors.Is(err, task.ErrClosed):
					// The delete may have been applied before the session
					// ended: the item may be gone, taken by this call.
					k(false, &UnknownTakeError{Item: *it, Err: err})
				default:
					k(false, err)
				}
			})
		}
		settle = func(cause error) {
			task.Run(s, c.Retry(task.Exists(path), zkops.Retry), func(cur *task.Stat, err error) {
				switch {
				case err != nil:
					k(false, &UnknownTakeError{Item: *it, Err: err})
				case cur != nil && cur.Czxid == st.Czxid:
					// Our incarnation is there: the delete was not applied
					// (a session's requests are applied in order).
					lost = false
					del(nil)
				default:
					k(false, &UnknownTakeError{Item: *it, Err: cause})
				}
			})
		}
		del(nil)
	}
}
