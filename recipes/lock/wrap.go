package lock

import (
	"errors"
	"math"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// The sequence number a ZooKeeper server appends is the parent's stored
// cversion, a Java int, formatted with %010d; each child create adds one.
// After 2^31-1 creates under one directory it stops being a queue number:
//
//   - the committed counter stays at math.MaxInt32 (DataTree raises the
//     parent's cversion only when the new value is larger), so every later
//     create is named ...2147483647 too; with unique prefixes these creates
//     all succeed, and contenders would tie: a newcomer could sort ahead of
//     the holder;
//   - a create that the server prepares while another is still in its
//     pipeline reads the wrapped in-flight value and is named with a
//     negative number, "-2147483648" and up.
//
// So a contender whose number is math.MaxInt32 or negative (exhausted)
// never takes part in the queue: it deletes its node, waits until the
// directory has no children, deletes the directory (its cversion goes with
// it) and starts again, creating the directory afresh with the counter at
// zero. Contenders already queued below the maximum go on in order and are
// served first; nobody can hold the lock with an exhausted number, so two
// exhausted nodes never compete. To make that pause rare, a holder whose
// number is at or above resetAbove deletes the directory on release when
// it is empty: on a lock that is idle now and then the counter restarts
// long before it runs out.
const resetAbove = math.MaxInt32 - 1<<20

// exhausted reports whether seq is a number the server can no longer order.
func exhausted(seq int64) bool { return seq >= math.MaxInt32 || seq < 0 }

// restart withdraws a contender with an exhausted number and starts the
// attempt again once the directory has been emptied and recreated.
func (a *attempt) restart() {
	node := a.l.child(a.name)
	task.Run(a.s, zkops.Delete(node), func(_ task.Unit, err error) {
		if err != nil {
			a.fail(err)
			return
		}
		a.name, a.seq, a.stat = "", 0, task.Stat{}
		task.Run(a.s, emptyDir(a.l.dir), func(_ task.Unit, err error) {
			if err != nil {
				a.fail(err)
				return
			}
			a.create()
		})
	})
}

// emptyDir waits until dir has no children (child watch), then deletes
// it. A directory already gone is done; a child that arrives before the
// delete (NotEmpty) means waiting again.
func emptyDir(dir string) task.Task[task.Unit] {
	round := c.Then(c.Retry(task.ChildrenW(dir), retry), func(cw task.ChildrenWatch) task.Task[bool] {
		if len(cw.Names) > 0 {
			return c.Map(cw.Watch.Wait(), func(task.Event) bool { return true })
		}
		return c.Map(removeDir(dir), func(gone bool) bool { return !gone })
	})
	loop := c.Loop(true, func(again bool) bool { return again }, func(bool) task.Task[bool] { return round })
	return c.Catch(c.Map(loop, func(bool) task.Unit { return task.Unit{} }), func(err error) task.Task[task.Unit] {
		if errors.Is(err, task.ErrNoNode) {
			return task.Done
		}
		return task.Fail[task.Unit](err)
	})
}

// removeDir deletes dir if it has no children: true when it is gone
// (deleted now or already), false when a child is in it.
func removeDir(dir string) task.Task[bool] {
	del := c.Map(c.Retry(task.Delete(dir, task.AnyVersion), retry), func(task.Unit) bool { return true })
	return c.Catch(del, func(err error) task.Task[bool] {
		switch {
		case errors.Is(err, task.ErrNoNode):
			return task.Value(true)
		case errors.Is(err, task.ErrNotEmpty):
			return task.Value(false)
		}
		return task.Fail[bool](err)
	})
}
