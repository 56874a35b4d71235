package queue

import (
	"errors"
	"fmt"

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
		t := &takingDelete{q: q, s: s, k: k}
		t.round(false)
	}
}

// takingDelete is one run of takeDelete's task.
type takingDelete struct {
	q *Queue
	s *task.Scope
	k task.Cont[*Item]
}

func (t *takingDelete) round(watch bool) {
	q, s, k := t.q, t.s, t.k
	// The epoch first: read before the listing, so a check of it
	// that passes proves the listing and the item read are of the
	// directory the delete acts on (FIFO, and no new item taken
	// for an old one of the same name).
	task.Run(s, q.epochVersion(), func(epoch int32, err error) {
		if err != nil {
			k(nil, err)
			return
		}
		t.list(watch, epoch)
	})
}

func (t *takingDelete) list(watch bool, epoch int32) {
	q, s, k := t.q, t.s, t.k
	task.Run(s, q.list(watch), func(cw task.ChildrenWatch, err error) {
		if err != nil {
			k(nil, err)
			return
		}
		its := ordered(cw.Names)
		switch {
		case len(its) > 0:
			t.try(its, 0, epoch)
		case cw.Watch == nil:
			t.round(true) // empty: list again, this time with a watch
		default:
			task.Run(s, cw.Watch.Wait(), func(_ task.Event, err error) {
				if err != nil {
					k(nil, err)
					return
				}
				t.round(false)
			})
		}
	})
}

func (t *takingDelete) try(its []Item, i int, epoch int32) {
	q, s, k := t.q, t.s, t.k
	if i == len(its) {
		t.round(false)
		return
	}
	it := its[i]
	path := q.item(it.Name)
	{ // (the epoch was read before the listing)
		task.Run(s, c.Retry(task.Get(path), zkops.Retry), func(d task.Data, err error) {
			switch {
			case errors.Is(err, task.ErrNoNode):
				t.try(its, i+1, epoch)
			case err != nil:
				k(nil, err)
			default:
				it.Data, it.czxid = d.Data, d.Stat.Czxid
				detached(q, s, q.deleteItem(path, d.Stat, epoch, &it), func(r outcome, err error) {
					switch {
					case err != nil:
						k(nil, err)
					case r == taken:
						k(&it, nil)
					case r == stale:
						t.round(false) // the directory was created again: list it again
					default:
						t.try(its, i+1, epoch)
					}
				}, func(r outcome, err error) {
					var ute *UnknownTakeError
					switch {
					case r == taken && err == nil:
						q.putBack(s, it) // taken as the take ended: not lost
					case errors.As(err, &ute):
						// Perhaps taken, and its caller gone: reported
						// with the item, as the Take would have.
						s.Runtime().Report(fmt.Errorf("queue: a take that ended early: %w", err))
					}
				})
			}
		})
	}
}

// outcome is what a take's delete or move of one item came to.
type outcome int

const (
	gone  outcome = iota // the item was gone: taken by someone else
	taken                // this take took it
	stale                // the directory's epoch changed since it was read
)

// deleteItem deletes the incarnation of the item at path that st
// describes, read at st.Version with the directory's epoch at version
// epoch: one multi checks the epoch and deletes the item at that
// version. A delete whose reply was lost is settled by the item's
// incarnation, never sent again by name and version alone (a new item
// put under the same name has version 0 too): the node at path is read,
// and if it is the same incarnation (its czxid) the delete was not
// applied and is sent again; if it is gone or another incarnation, the
// item is gone but not who took it, and the take fails with an
// *UnknownTakeError (never delivered: it may have been delivered to
// another consumer).
func (q *Queue) deleteItem(path string, st task.Stat, epoch int32, it *Item) task.Task[outcome] {
	return func(s *task.Scope, k task.Cont[outcome]) {
		d := &deleting{q: q, s: s, k: k, path: path, st: st, epoch: epoch, it: it}
		d.del(nil)
	}
}

// deleting is one run of deleteItem's task.
type deleting struct {
	q     *Queue
	s     *task.Scope
	k     task.Cont[outcome]
	path  string
	st    task.Stat
	epoch int32
	it    *Item
	lost  bool // a delete's reply was lost
}

func (d *deleting) del(error) {
	q, s, k, path, st, epoch, it := d.q, d.s, d.k, d.path, d.st, d.epoch, d.it
	ops := []task.MultiOp{q.epochCheck(epoch), &task.DeleteRequest{Path: path, Version: st.Version}}
	task.Run(s, task.Multi(ops...), func(_ []task.MultiResult, err error) {
		switch i := multiIndex(err); {
		case err == nil:
			k(taken, nil)
		case i == 0 && (errors.Is(err, task.ErrNoNode) || errors.Is(err, task.ErrBadVersion)):
			// The epoch moved (or was deleted by hand): the
			// directory may have been created again since the
			// item was read. Not applied.
			q.staleEpoch(epoch)
			switch {
			case d.lost:
				k(gone, &UnknownTakeError{Item: *it, Err: err})
			case errors.Is(err, task.ErrNoNode):
				task.Run(s, zkops.EnsurePath(q.epochPath(), q.acl), func(_ task.Unit, err error) { k(stale, err) })
			default:
				k(stale, nil)
			}
		case errors.Is(err, task.ErrNoNode), errors.Is(err, task.ErrBadVersion):
			switch {
			case canary.On(bugDeleteNoNodeIsTaken):
				k(taken, nil)
			case d.lost && canary.On(bugLossRetryIsTaken):
				k(taken, nil)
			case d.lost:
				k(gone, &UnknownTakeError{Item: *it, Err: err})
			default:
				k(gone, nil)
			}
		case errors.Is(err, task.ErrConnectionLoss):
			d.lost = true
			if canary.On(bugLossRetryIsTaken) {
				d.del(err)
				return
			}
			d.settle(err)
		case errors.Is(err, task.ErrNotSent):
			d.del(err)
		case errors.Is(err, task.ErrSessionExpired), errors.Is(err, task.ErrClosed):
			// The delete may have been applied before the session
			// ended: the item may be gone, taken by this call.
			k(gone, &UnknownTakeError{Item: *it, Err: err})
		default:
			k(gone, err)
		}
	})
}

func (d *deleting) settle(cause error) {
	s, k, path, st, it := d.s, d.k, d.path, d.st, d.it
	task.Run(s, c.Retry(zkops.AfterSync(path, task.Exists(path)), zkops.Retry), func(cur *task.Stat, err error) {
		switch {
		case err != nil:
			k(gone, &UnknownTakeError{Item: *it, Err: err})
		case cur != nil && cur.Czxid == st.Czxid:
			// Our incarnation is there: the delete was not applied
			// (a session's requests are applied in order).
			d.lost = false
			d.del(nil)
		default:
			k(gone, &UnknownTakeError{Item: *it, Err: cause})
		}
	})
}
