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
					it.Data = d.Data
					q.deleteItem(s, path, d.Stat.Version, &it, func(taken bool, err error) {
						switch {
						case err != nil:
							k(nil, err)
						case taken:
							k(&it, nil)
						default:
							try(its, i+1)
						}
					})
				}
			})
		}
		round(false)
	}
}

// deleteItem deletes path at version: taken is true if this delete
// removed it, false if it was gone (someone else took it). A delete whose
// reply was lost is sent again: success means the first was not applied
// and this one took the item; NoNode means the item is gone but not who
// took it, and the take fails with an *UnknownTakeError (never delivered:
// it may have been delivered to another consumer).
func (q *Queue) deleteItem(s *task.Scope, path string, version int32, it *Item, k func(taken bool, err error)) {
	lost := false
	var del func()
	del = func() {
		task.Run(s, task.Delete(path, version), func(_ task.Unit, err error) {
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
				del()
			case errors.Is(err, task.ErrNotSent):
				del()
			case errors.Is(err, task.ErrSessionExpired), errors.Is(err, task.ErrClosed):
				// The delete may have been applied before the session
				// ended: the item may be gone, taken by this call.
				k(false, &UnknownTakeError{Item: *it, Err: err})
			default:
				k(false, err)
			}
		})
	}
	del()
}
