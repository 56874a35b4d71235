package partition

import (
	"fmt"
	"strings"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// release gives item up: its WithDrain task (if set) runs first, the item
// still held; then the hold ends (reported) and its node is deleted, and
// the next contender holds.
func (m *Member) release(item string) {
	h := m.holds[item]
	if h.draining {
		return
	}
	h.draining = true
	drain := m.p.cfg.Drain
	if drain == nil {
		m.give(h)
		return
	}
	sc := m.sc
	d := sc.Child()
	m.rt.Schedule(func() {
		task.RunIn(d, drain(h.Hold), func(task.Unit, error) {
			if m.holds[h.Item] == h && m.current(sc) {
				m.give(h)
				m.reconcile()
			}
		})
	})
}

// give ends hold h and deletes its node in the background.
func (m *Member) give(h *hold) {
	h.end()
	delete(m.holds, h.Item)
	h.mon.Cancel(task.ErrCanceled)
	h.mon.Close()
	del := resetting(m.p.ItemDir(h.Item), h.Path, zkops.DeleteOwned(h.Path, h.Session.ID))
	sess := h.Session
	if !canary.On(bugLeaveLeavesRefused) {
		m.giving[h.Path] = sess
	}
	m.rt.Schedule(func() {
		task.Go(m.rt.SessionScope(), task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
			if s.Session().Epoch != sess.Epoch {
				k(task.Unit{}, nil)
				return
			}
			task.Run(s, del, func(_ task.Unit, err error) { k(task.Unit{}, endedOK(err)) })
		}), func(_ task.Unit, err error) {
			if err == nil {
				delete(m.giving, h.Path)
				return
			}
			m.rt.Report(fmt.Errorf("partition: releasing %s: %w", h.Path, err))
		})
	})
}

// bugLeaveLeavesRefused: a give-up deletes the lock nodes of the holds
// and tries it has, not those of holds given back or tries withdrawn
// before whose delete an ACL refused (it goes on in the background): a
// Leave succeeded with such a node still in its item's queue.
const bugLeaveLeavesRefused canary.Name = "partition/leave-leaves-refused-delete"

// Leave returns a task that ends the member: it gives up every item
// (deleting its lock nodes, so the next contenders hold at once, and
// those of items given back before whose delete has not succeeded yet:
// one an operator's ACL refused fails Leave with that refusal while it
// goes on in the background) and leaves the party (deleting its node),
// retrying past connection loss.
// If the caller's scope ends first, the deletes go on as a flow of their
// own. Done is closed and Err becomes ErrLeft at once (unless the member
// had ended before: Err keeps why, and the deletes of its end, if it
// started them, are the ones waited for). Leave is idempotent: a later
// Leave succeeds once the deletes the first started are done (after a
// Leave that failed, it sends them again); nodes
// already gone, or a session that ended, are success; a failed delete is
// also reported to the executor's Config.OnError. Run on another
// executor than the member's, it does nothing and fails with an error
// wrapping task.ErrInvalidArgument. Like any task, it does not start in a
// scope that has already ended (task.Run): to give it back whatever the
// outcome of the work in between, register it with Scope.Defer once
// taken (a cleanup runs as a flow of its own when the scope closes, ended
// or not).
func (m *Member) Leave() task.Task[task.Unit] {
	if m == nil || m.p == nil {
		return task.Fail[task.Unit](errNil("Member"))
	}
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		if s.Runtime() != m.rt {
			k(task.Unit{}, errNotOurs)
			return
		}
		if !m.leaving {
			var holds []Hold
			var tries []attemptNode
			var party string
			if m.Err() == nil {
				holds, party = m.nodes()
				tries = m.openAttempts()
			}
			m.end(ErrLeft)
			m.giveUp(holds, tries, party, m.p.cfg.Drain)
		}
		if m.left && m.leftErr != nil {
			// The give-up failed (a delete an ACL refused, going on in
			// the background): its deletes again, those done succeeding
			// at once, so that a later Leave succeeds once they are.
			m.giveUp(m.upHolds, m.upTries, m.upParty, nil)
		}
		if m.left {
			k(task.Unit{}, m.leftErr)
			return
		}
		// A session that ends meanwhile took the nodes: success.
		done := func(v task.Unit, err error) { k(v, endedOK(err)) }
		task.Suspend(s, done, func(resume task.Cont[task.Unit]) func() {
			m.leaveWaiters = append(m.leaveWaiters, resume)
			return nil
		})
	}
}

// nodes returns the member's holds and its party node's path on its
// session now ("" if none). Executor goroutine.
func (m *Member) nodes() ([]Hold, string) {
	var holds []Hold
	var buf [16]string
	for _, it := range sortedKeys(buf[:0], m.holds) {
		holds = append(holds, m.holds[it].Hold)
	}
	party := ""
	if m.party != "" {
		party = m.p.partyDir() + "/" + m.party
	}
	return holds, party
}

// giveUp deletes the lock nodes of holds (after drain's task for each,
// if drain is not nil), those the tries in flight may have made, and the
// party node, on the member's session, as a flow of its own, each
// whatever the others' outcome; the Leaves wait for it to end, and get
// its first error. Once per member, and again (without drain) by a Leave
// after it failed. Executor goroutine.
func (m *Member) giveUp(holds []Hold, tries []attemptNode, party string, drain func(Hold) task.Task[task.Unit]) {
	again := m.leaving
	m.leaving, m.left = true, false
	m.upHolds, m.upTries, m.upParty = holds, tries, party
	sess := m.sess
	var steps []task.Task[task.Unit]
	for _, h := range holds {
		if drain != nil {
			// The member has ended, and its holds with it (dropAll);
			// the drain's own Hold stands until the drain ends.
			hd := h.forDrain()
			steps = append(steps, func(s *task.Scope, k task.Cont[task.Unit]) {
				task.Run(s, drain(hd), func(task.Unit, error) {
					hd.end()
					k(task.Unit{}, nil)
				})
			})
		}
		steps = append(steps, resetting(m.p.ItemDir(h.Item), h.Path, deleteOn(sess, h.Path)))
	}
	for _, path := range sortedKeys(nil, m.giving) {
		// Given back before, its delete refused (it goes on in the
		// background) or still in flight: deleted again and waited for.
		steps = append(steps, deleteOn(m.giving[path], path))
	}
	for _, a := range tries {
		// The try's own cleanup deletes it too, in the background: this
		// one is waited for (both find the node by prefix and owner).
		// Run again, without a run of its own in the background: the
		// first started one if refused.
		if again {
			steps = append(steps, cleanupOwned(a.dir, a.prefix, a.sess))
		} else {
			steps = append(steps, cleanupAttempt(a.dir, a.prefix, a.sess))
		}
	}
	if party != "" {
		steps = append(steps, deleteOn(sess, party))
	}
	all := task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
		g := &givingUp{s: s, k: k, steps: steps}
		g.onStep = g.stepped
		g.next(0)
	})
	rt := m.rt
	task.Go(rt.SessionScope(), all, func(_ task.Unit, err error) {
		m.left, m.leftErr = true, endedOK(err)
		if m.leftErr != nil {
			// Also when a Leave waits: its caller may have gone (a ctx
			// that ended), and an end on an error has none.
			rt.Report(fmt.Errorf("partition: %s: giving up member %s: %w", m.p.cfg.Path, m.id, m.leftErr))
		}
		ws := m.leaveWaiters
		m.leaveWaiters = nil
		for _, w := range ws {
			w(task.Unit{}, m.leftErr)
		}
	})
}

// givingUp is one run of a give-up's deletes (giveUp), one after
// another with the continuation of each made once. Every delete is
// tried, whatever the others' outcome: one an ACL refuses (its node goes
// in the background once the ACL lets it: zkops.KeepDeleting) does not
// keep the party node, or the other items, from going. The first error
// is the outcome.
type givingUp struct {
	s      *task.Scope
	k      task.Cont[task.Unit]
	steps  []task.Task[task.Unit]
	i      int // the step under way
	first  error
	onStep task.Cont[task.Unit]
}

func (g *givingUp) next(i int) {
	if i == len(g.steps) {
		g.k(task.Unit{}, g.first)
		return
	}
	g.i = i
	task.Run(g.s, g.steps[i], g.onStep)
}

func (g *givingUp) stepped(_ task.Unit, err error) {
	if err = endedOK(err); err != nil && g.first == nil {
		g.first = err
	}
	if g.s.Err() != nil {
		g.k(task.Unit{}, g.s.Err())
		return
	}
	g.next(g.i + 1)
}

// errNotOurs is the error of Leave run on another executor than the
// member's.
var errNotOurs = fmt.Errorf("partition: a member joined on another executor: %w", task.ErrInvalidArgument)

// deleteOn deletes path if session sess owns it; on a later session there
// is nothing to do (sess's ephemerals went with it).
func deleteOn(sess task.Session, path string) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		if s.Session().Epoch != sess.Epoch {
			k(task.Unit{}, nil)
			return
		}
		task.Run(s, zkops.DeleteOwned(path, sess.ID), func(_ task.Unit, err error) { k(task.Unit{}, endedOK(err)) })
	}
}

// resetting is del followed, when the lock node at path is numbered at
// or above zkops.ResetAbove, by the deletion of its item's directory dir
// if it is then empty, so that the directory's counter restarts long
// before it runs out (as recipes/lock's Release does). Without it, at
// the counter's end every contender of the item withdraws and waits
// until the directory empties (lockItem).
func resetting(dir, path string, del task.Task[task.Unit]) task.Task[task.Unit] {
	if seq, ok := zkops.SeqAfter(path[strings.LastIndexByte(path, '/')+1:], lockTag); !ok || seq < zkops.ResetAbove {
		return del
	}
	return c.Seq(del, zkops.ResetIfEmpty(dir))
}
