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

// takingDelete is one run of takeDelete's task. Its steps run one at a
// time, each started by the one before: the step under way keeps its
// state here, and each continuation is made once for all the take's
// rounds (a take waiting on an empty queue lists again and again).
type takingDelete struct {
	q  *Queue
	s  *task.Scope
	k  task.Cont[*Item]
	ls listing

	watch bool    // the round's listing sets a watch
	epoch int32   // the epoch, read before the round's listing
	its   []Item  // the round's items (its buffer, the next round's)
	i     int     // the item tried
	path  string  // its path
	it    *Item   // the item whose delete runs (detached)
	del   outcome // (for deleted)

	onEpoch   task.Cont[int32]
	onList    task.Cont[task.ChildrenWatch]
	onFired   task.Cont[task.Event]
	onGot     task.Cont[task.Data]
	onDeleted func(outcome, error)
	onOrphan  func(outcome, error)
}

func (t *takingDelete) round(watch bool) {
	// The epoch first: read before the listing, so a check of it
	// that passes proves the listing and the item read are of the
	// directory the delete acts on (FIFO, and no new item taken
	// for an old one of the same name).
	t.watch = watch
	if t.onEpoch == nil {
		t.onEpoch = t.epochRead
	}
	task.Run(t.s, t.q.epochVersion(), t.onEpoch)
}

func (t *takingDelete) epochRead(epoch int32, err error) {
	if err != nil {
		t.k(nil, err)
		return
	}
	t.list(t.watch, epoch)
}

func (t *takingDelete) list(watch bool, epoch int32) {
	t.epoch = epoch
	if t.onList == nil {
		t.onList = t.listed
	}
	task.Run(t.s, t.ls.of(t.q, watch), t.onList)
}

func (t *takingDelete) listed(cw task.ChildrenWatch, err error) {
	if err != nil {
		t.k(nil, err)
		return
	}
	// The last round's items are done with: their buffer serves
	// (an item taken is a copy, see got).
	t.its = ordered(t.its[:0], cw.Names)
	switch {
	case len(t.its) > 0:
		t.try(0)
	case cw.Watch == nil:
		t.round(true) // empty: list again, this time with a watch
	default:
		if t.onFired == nil {
			t.onFired = t.fired
		}
		task.Run(t.s, cw.Watch.Wait(), t.onFired)
	}
}

func (t *takingDelete) fired(_ task.Event, err error) {
	// A watch another user of the session took away (RemoveWatches: a
	// recursive cache of the directory stopping) is one more wake-up.
	if err != nil && !errors.Is(err, task.ErrWatchRemoved) {
		t.k(nil, err)
		return
	}
	t.round(false)
}

// try reads item i of the round, and deletes it (got); past the last
// item, the next round.
func (t *takingDelete) try(i int) {
	if i == len(t.its) {
		t.round(false)
		return
	}
	t.i = i
	t.path = t.q.item(t.its[i].Name)
	if t.onGot == nil {
		t.onGot = t.got
	}
	// (the epoch was read before the listing)
	task.Run(t.s, c.Retry(task.Get(t.path), zkops.Retry), t.onGot)
}

func (t *takingDelete) got(d task.Data, err error) {
	q, s := t.q, t.s
	switch {
	case errors.Is(err, task.ErrNoNode):
		t.try(t.i + 1)
	case err != nil:
		t.k(nil, err)
	default:
		it := new(Item) // the item taken, if it is: its own copy
		*it = t.its[t.i]
		it.Data, it.czxid = d.Data, d.Stat.Czxid
		t.it = it
		if t.onDeleted == nil {
			t.onDeleted, t.onOrphan = t.deleted, t.orphan
		}
		detached(q, s, q.deleteItem(t.path, d.Stat, t.epoch, it), t.onDeleted, t.onOrphan)
	}
}

func (t *takingDelete) deleted(r outcome, err error) {
	switch {
	case err != nil:
		t.k(nil, err)
	case r == taken:
		t.k(t.it, nil)
	case r == stale:
		t.round(false) // the directory was created again: list it again
	default:
		t.try(t.i + 1)
	}
}

// orphan is the outcome of the delete of t.it once the take has ended.
func (t *takingDelete) orphan(r outcome, err error) {
	var ute *UnknownTakeError
	switch {
	case r == taken && err == nil:
		t.q.putBack(t.s, *t.it) // taken as the take ended: not lost
	case errors.As(err, &ute):
		// Perhaps taken, and its caller gone: reported
		// with the item, as the Take would have.
		t.s.Runtime().Report(fmt.Errorf("queue: a take that ended early: %w", err))
	}
}

// listing is a take's listing of the directory (list's task), made once
// for all the take's rounds: the directory is made when it is missing,
// and the nodes named with an exhausted number are swept. One round's
// listing runs at a time.
type listing struct {
	q    *Queue
	l    task.Task[task.ChildrenWatch] // the round's listing, retried
	s    *task.Scope
	k    task.Cont[task.ChildrenWatch]
	run  task.Task[task.ChildrenWatch] // start
	done task.Cont[task.ChildrenWatch] // listed
}

// of returns the listing task of a round, with a watch or not.
func (ls *listing) of(q *Queue, watch bool) task.Task[task.ChildrenWatch] {
	ls.q, ls.l = q, q.list(watch)
	if ls.run == nil {
		ls.run, ls.done = ls.start, ls.listed
	}
	return ls.run
}

func (ls *listing) start(s *task.Scope, k task.Cont[task.ChildrenWatch]) {
	ls.s, ls.k = s, k
	ls.try()
}

// try runs the listing, and again once the directory is made if it is
// missing.
func (ls *listing) try() { task.Run(ls.s, ls.l, ls.done) }

func (ls *listing) listed(cw task.ChildrenWatch, err error) {
	q, s, k := ls.q, ls.s, ls.k
	switch {
	case errors.Is(err, task.ErrNoNode):
		task.Run(s, q.ensureDir(), func(_ task.Unit, err error) {
			if err != nil {
				k(task.ChildrenWatch{}, err)
				return
			}
			ls.try()
		})
	case err != nil:
		k(cw, err)
	default:
		q.sweep(s, cw.Names)
		k(cw, nil)
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
	sent  bool // first has been sent
	// The first multi's ops, in one allocation with the run (each send
	// has its own: one sent is never changed).
	first      [2]task.MultiOp
	epochCheck task.CheckRequest
	delete     task.DeleteRequest
}

func (d *deleting) del(error) {
	q, s, k, path, st, epoch, it := d.q, d.s, d.k, d.path, d.st, d.epoch, d.it
	var ops []task.MultiOp
	if !d.sent {
		d.sent = true
		d.epochCheck = task.CheckRequest{Path: q.epochPath(), Version: epoch}
		d.delete = task.DeleteRequest{Path: path, Version: st.Version}
		d.first = [2]task.MultiOp{&d.epochCheck, &d.delete}
		ops = d.first[:]
	} else {
		ops = []task.MultiOp{q.epochCheck(epoch), &task.DeleteRequest{Path: path, Version: st.Version}}
	}
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
