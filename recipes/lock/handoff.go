package lock

import (
	"bytes"
	"errors"
	"fmt"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/task"
)

// Handoff in one round trip (see the package documentation for the
// argument).
//
// A contender that held after waiting marks its node (setData to
// markData) as soon as it holds. A waiter reads its predecessor's data
// with a watch and lists the predecessor's children with a watch (a child
// watch on an ephemeral node fires only on its deletion), in one
// pipelined round: once it has seen the predecessor marked and then gone,
// it holds without listing the directory.

// Known bugs of the handoff that tests switch back on (internal/canary).
const (
	// bugMarkAtCreate: a contender marks its node right behind its
	// create, before it knows it holds: a waiter that gives up (deadline,
	// session expiry) leaves a marked node, and its successor holds when
	// it goes, while the contender below it still holds.
	bugMarkAtCreate canary.Name = "lock/mark-at-create"
	// bugMarkOnWake: a waiter whose predecessor went unmarked marks its
	// node at once, pipelined with the listing that tells it whether it
	// holds (saving the mark's round trip when it does): when the listing
	// shows it still waiting, its node carries the mark of a contender
	// that never held.
	bugMarkOnWake canary.Name = "lock/mark-on-wake"
)

// markData is the data a holder writes into its contender node. A node
// counts as marked when its data is exactly this and its version is
// above 0 (written after the create: a node created with these bytes is
// not marked).
var markData = []byte("zkflow-lock:held")

func isMark(d task.Data) bool {
	return d.Stat.Version > 0 && bytes.Equal(d.Data, markData)
}

// markNode returns the task that marks path, created at version v: a
// setData at version v, retried past connection loss. After a lost send a
// refusal for the node's version is ambiguous (our own earlier send may
// have been applied), so the node is read: the mark at version v+1 is
// ours (only a contender's owner writes the mark: see Safety); anything
// else is a write by someone else, and the task fails with an error
// wrapping task.ErrBadVersion. A node gone or a session ended ends the
// lock, which Held reports on its own: neither is an error here. Any
// other refusal (task.ErrNoAuth: an ACL without WRITE) is returned: the
// mark was not applied.
func markNode(path string, v int32) task.Task[task.Unit] {
	set := c.Map(c.Retry(task.Set(path, markData, v), retry), func(task.Stat) task.Unit { return task.Unit{} })
	mark := c.Catch(set, func(err error) task.Task[task.Unit] {
		if !errors.Is(err, task.ErrBadVersion) {
			return task.Fail[task.Unit](err)
		}
		return c.Then(c.Retry(task.Get(path), retry), func(d task.Data) task.Task[task.Unit] {
			if d.Stat.Version == v+1 && bytes.Equal(d.Data, markData) {
				return task.Value(task.Unit{}) // our earlier send was applied
			}
			return task.Fail[task.Unit](changedBySomeoneElse(path, err))
		})
	})
	return c.Catch(mark, func(err error) task.Task[task.Unit] {
		if errors.Is(err, task.ErrNoNode) || errors.Is(err, task.ErrSessionExpired) ||
			errors.Is(err, task.ErrClosed) || errors.Is(err, task.ErrCanceled) {
			return task.Value(task.Unit{})
		}
		return task.Fail[task.Unit](err)
	})
}

// changedBySomeoneElse is the cause of a hold lost because its mark was
// refused for the node's version: someone else wrote the node.
func changedBySomeoneElse(path string, err error) error {
	return fmt.Errorf("node %s changed by someone else: mark refused: %w", path, err)
}

// predWatch is one waiter's view of its predecessor: marked once its data
// was read as the mark or its data watch fired with NodeDataChanged;
// gone once a read found it missing or a watch fired with NodeDeleted;
// dataKnown once the data watch has fired or the data read found no node
// (nothing more will be heard of its data).
type predWatch struct {
	a         *attempt
	w         *task.Scope // the watches' scope, closed once decided
	pred      string
	marked    bool
	gone      bool
	dataKnown bool
	pending   int  // replies of the round not in yet
	over      bool // decided (held, listed or failed)
	// dataRetried, childRetried: the read was sent again under Retry.
	dataRetried, childRetried bool
}

// waitMarked waits on pred as waitFor does, but in one round reads pred's
// data with a watch and lists its children with a watch: when pred is
// seen marked and then deleted, the waiter holds at once.
func (a *attempt) waitMarked(pred string) {
	p := &predWatch{a: a, w: a.s.Child(), pred: pred, pending: 2}
	task.Run(p.w, task.GetW(pred), p.gotData)
	task.Run(p.w, task.ChildrenW(pred), p.gotChildren)
}

// gotData is the outcome of the data read. The first of each read is sent
// as it is; one whose outcome a retry settles (connection loss, not sent)
// is sent again under Retry.
func (p *predWatch) gotData(dw task.DataWatch, err error) {
	switch {
	case task.IsRetryable(err) && !p.dataRetried:
		p.dataRetried = true
		task.Run(p.w, c.Retry(task.GetW(p.pred), retry), p.gotData)
		return
	case errors.Is(err, task.ErrNoNode):
		p.gone, p.dataKnown = true, true
	case err != nil:
		p.fail(err)
		return
	default:
		if isMark(dw.Data) {
			p.marked = true
		}
		task.Run(p.w, dw.Watch.Wait(), p.onData)
	}
	p.replied()
}

// gotChildren is the outcome of the child listing (see gotData).
func (p *predWatch) gotChildren(cw task.ChildrenWatch, err error) {
	switch {
	case task.IsRetryable(err) && !p.childRetried:
		p.childRetried = true
		task.Run(p.w, c.Retry(task.ChildrenW(p.pred), retry), p.gotChildren)
		return
	case errors.Is(err, task.ErrNoNode):
		p.gone = true
	case err != nil:
		p.fail(err)
		return
	default:
		task.Run(p.w, cw.Watch.Wait(), p.onChild)
	}
	p.replied()
}

func (p *predWatch) replied() {
	p.pending--
	p.decide()
}

func (p *predWatch) onData(ev task.Event, err error) {
	switch {
	case errors.Is(err, task.ErrWatchRemoved):
		p.removed()
		return
	case err != nil:
		p.fail(err)
		return
	case ev.Type == task.EventNodeDataChanged:
		// Only the owner writes its node, and it writes only the mark.
		p.marked = true
	case ev.Type == task.EventNodeDeleted:
		p.gone = true
	}
	p.dataKnown = true
	p.decide()
}

func (p *predWatch) onChild(ev task.Event, err error) {
	if errors.Is(err, task.ErrWatchRemoved) {
		p.removed()
		return
	}
	if err != nil {
		p.fail(err)
		return
	}
	if ev.Type != task.EventNodeDeleted {
		// A child watch on an ephemeral node fires only on its deletion;
		// any other event (none is expected) makes the waiter list again.
		if !p.over {
			p.end()
			p.a.wake()
		}
		return
	}
	p.gone = true
	p.decide()
}

// decide acts once pred is gone and everything that could still say it
// was marked has been heard: held if it was marked, otherwise list.
func (p *predWatch) decide() {
	if p.over || p.pending > 0 || !p.gone {
		return
	}
	if p.marked {
		p.end()
		p.a.acquired()
		return
	}
	if !p.dataKnown {
		return // the data watch fires too: it tells whether the mark came first
	}
	p.end()
	p.a.wake()
}

// removed: another user of the session took a watch on pred away
// (RemoveWatches: a recursive cache of pred's path stopping). What it
// would have told is unknown: one more wake-up, list again.
func (p *predWatch) removed() {
	if !p.over {
		p.end()
		p.a.wake()
	}
}

func (p *predWatch) fail(err error) {
	if p.over {
		return
	}
	p.end()
	p.a.fail(err)
}

// end marks the wait decided and closes its scope: what is still waiting
// there is abandoned (and ignored, being over).
func (p *predWatch) end() {
	p.over = true
	p.w.Close()
}

// wake lists again after the predecessor went without handing the lock
// on (or changed).
func (a *attempt) wake() {
	if canary.On(bugMarkOnWake) && !a.marked {
		a.marked = true
		task.Run(a.s.Runtime().SessionScope(), markNode(a.path, a.stat.Version), func(task.Unit, error) {})
	}
	a.check()
}
