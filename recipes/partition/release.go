package partition

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	c "github.com/zkflow/zkflow/combinators"
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
	delete(m.holds, h.Item)
	h.mon.Cancel(task.ErrCanceled)
	h.mon.Close()
	del := resetting(m.p.ItemDir(h.Item), h.Path, zkops.DeleteOwned(h.Path, h.Session.ID))
	sess := h.Session
	m.rt.Schedule(func() {
		task.Go(m.rt.SessionScope(), task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
			if s.Session().Epoch != sess.Epoch {
				k(task.Unit{}, nil)
				return
			}
			task.Run(s, del, func(_ task.Unit, err error) { k(task.Unit{}, endedOK(err)) })
		}), func(_ task.Unit, err error) {
			if err != nil {
				m.rt.Report(fmt.Errorf("partition: releasing %s: %w", h.Path, err))
			}
		})
	})
}

// Leave returns a task that ends the member: it gives up every item
// (deleting its lock nodes, so the next contenders hold at once) and
// leaves the party (deleting its node), retrying past connection loss.
// If the caller's scope ends first, the deletes go on as a flow of their
// own. Done is closed and Err becomes ErrLeft at once. Leave is
// idempotent; nodes already gone, or a session that ended, are success.
// Like any task, it does not start in a scope that has
// already ended (task.Run): to give it back whatever the outcome of the
// work in between, register it with Scope.Defer once taken (a cleanup
// runs as a flow of its own when the scope closes, ended or not).
func (m *Member) Leave() task.Task[task.Unit] {
	if m == nil || m.p == nil {
		return task.Fail[task.Unit](fmt.Errorf("partition: nil Member: %w", task.ErrInvalidArgument))
	}
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		var holds []Hold
		var party string
		if m.Err() == nil {
			for _, it := range slices.Sorted(maps.Keys(m.holds)) {
				holds = append(holds, m.holds[it].Hold)
			}
			if m.party != "" {
				party = m.p.partyDir() + "/" + m.party
			}
		}
		sess := m.sess
		m.end(ErrLeft)
		drain := m.p.cfg.Drain
		var steps []task.Task[task.Unit]
		for _, h := range holds {
			if drain != nil {
				steps = append(steps, c.Catch(drain(h), func(error) task.Task[task.Unit] { return task.Value(task.Unit{}) }))
			}
			steps = append(steps, resetting(m.p.ItemDir(h.Item), h.Path, deleteOn(sess, h.Path)))
		}
		if party != "" {
			steps = append(steps, deleteOn(sess, party))
		}
		all := task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
			var next func(i int)
			next = func(i int) {
				if i == len(steps) {
					k(task.Unit{}, nil)
					return
				}
				task.Run(s, steps[i], func(_ task.Unit, err error) {
					if err = endedOK(err); err != nil {
						k(task.Unit{}, err)
						return
					}
					next(i + 1)
				})
			}
			next(0)
		})
		task.Run(s, zkops.Detached(all), func(_ task.Unit, err error) { k(task.Unit{}, endedOK(err)) })
	}
}

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
