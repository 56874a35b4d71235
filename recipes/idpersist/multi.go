package idpersist

import (
	"errors"
	"fmt"
	"slices"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// multiLoop is the leader's work with Config.Parent set: it lists the
// children of Parent with a watch and serves each as a sequence of its
// own (a flow per sequence, each with its own mark and limit node),
// starting flows for children added and stopping those of children
// removed, until a flow or the listing fails. A flow ending with
// errRemoved is not a failure: the next listing retires the sequence.
func (r *Replica) multiLoop(me string) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		ms := s.Child()
		m := &multiLeader{r: r, me: me, ms: ms, running: map[string]*task.Scope{}}
		round := c.Retry(m.round(), c.Policy{On: leadRetryOn})
		loop := c.Loop(task.Unit{}, func(task.Unit) bool { return true }, func(task.Unit) task.Task[task.Unit] { return round })
		task.RunIn(ms, loop, k)
	}
}

type multiLeader struct {
	r       *Replica
	me      string
	ms      *task.Scope            // the leader's scope: canceled on the first failure
	running map[string]*task.Scope // name -> scope of the flow serving it
}

// start serves name unless it is served already: the name is registered
// as live in Stores (durably) before anything is written for it.
func (m *multiLeader) start(name string) {
	if _, ok := m.running[name]; ok {
		return
	}
	cfg := m.r.cfg.Named(name)
	load := task.Func(func(*task.Scope) (*leaderState, error) {
		live, err := m.r.cfg.Stores.Names()
		if err != nil {
			return nil, err
		}
		if err := m.r.cfg.Stores.Register(name); err != nil {
			return nil, err
		}
		st, err := m.r.cfg.Stores.Mark(name)
		if err != nil {
			return nil, err
		}
		mark, err := st.Load()
		if err != nil {
			return nil, err
		}
		cfg.Store = st
		ls := &leaderState{cfg: cfg, mark: mark, multi: true}
		if !slices.Contains(live, name) {
			// Added (again): IDs up to a mark kept from an earlier life
			// of the name may have been handed out.
			ls.floor = mark
		}
		return ls, nil
	})
	cs := m.ms.Child()
	m.running[name] = cs
	task.RunIn(cs, m.r.serve(m.me, load), func(_ task.Unit, err error) {
		if m.running[name] == cs {
			delete(m.running, name)
		}
		if m.ms.Err() != nil || errors.Is(err, errRemoved) {
			return
		}
		m.ms.Cancel(fmt.Errorf("idpersist: sequence %s: %w", cfg.Sequence, err))
	})
}

// stop ends the flow serving name, if any.
func (m *multiLeader) stop(name string) {
	if cs, ok := m.running[name]; ok {
		delete(m.running, name)
		cs.Cancel(errRemoved)
	}
}

// retire records that name was removed (durably; its mark is kept). Its
// limit node is kept, bound to the removed node: deleted, the limit of
// the name's next life would be created again at version 0, a version a
// generator may have read in the earlier life, and that generator's late
// multi (the limit checked at the version it read, the sequence set at
// the version it read) would pass on the new nodes and hand out an ID
// again (TestReaddedNameLimitVersionAgain). Kept, the name added again is
// raised and bound by rebind, whose multi moves the limit's version past
// every version read.
func (m *multiLeader) retire(name string) task.Task[task.Unit] {
	if canary.On(bugRetireDeletesLimit) {
		del := c.OnError(fenced(m.me, &task.DeleteRequest{Path: m.r.cfg.Limits + "/" + name, Version: task.AnyVersion}),
			func(error) task.Task[task.Unit] { return task.Done }, task.ErrNoNode)
		return c.Seq(del, task.Func(func(*task.Scope) (task.Unit, error) { return task.Unit{}, m.r.cfg.Stores.Retire(name) }))
	}
	return task.Func(func(*task.Scope) (task.Unit, error) { return task.Unit{}, m.r.cfg.Stores.Retire(name) })
}

// bugRetireDeletesLimit: retire deletes the removed name's limit node, so
// that the limit of its next life is made again at version 0
// (TestReaddedNameLimitVersionAgain).
const bugRetireDeletesLimit canary.Name = "idpersist/retire-deletes-limit"

// round lists the sequences (with a watch), starts and stops flows, and
// settles the live names that have no node: removed (their limit node
// remains: retire them) or lost with ZooKeeper's data (no limit node
// either: serve them, which restores the node from the mark). Then it
// waits for the list to change.
func (m *multiLeader) round() task.Task[task.Unit] {
	cfg := m.r.cfg
	list := c.OnError(task.ChildrenW(cfg.Parent), func(error) task.Task[task.ChildrenWatch] {
		// Parent deleted: create it again and list again.
		create := c.OnError(c.Map(zkops.Create(cfg.Parent, nil, task.Persistent, cfg.ACL), func(string) task.Unit { return task.Unit{} }),
			func(error) task.Task[task.Unit] { return task.Done }, task.ErrNodeExists)
		return c.Then(create, func(task.Unit) task.Task[task.ChildrenWatch] { return task.Fail[task.ChildrenWatch](task.ErrNotSent) })
	}, task.ErrNoNode)
	return c.Then(list, func(cw task.ChildrenWatch) task.Task[task.Unit] {
		names := slices.Sorted(slices.Values(cw.Names))
		for _, n := range names {
			m.start(n)
		}
		for n := range m.running {
			if !slices.Contains(names, n) {
				m.stop(n)
			}
		}
		live, err := cfg.Stores.Names()
		if err != nil {
			return task.Fail[task.Unit](err)
		}
		t := task.Done
		for _, n := range live {
			if slices.Contains(names, n) {
				continue
			}
			settle := c.Then(task.Exists(cfg.Limits+"/"+n), func(st *task.Stat) task.Task[task.Unit] {
				if st != nil {
					return m.retire(n)
				}
				return task.Func(func(*task.Scope) (task.Unit, error) { m.start(n); return task.Unit{}, nil })
			})
			t = c.Seq(t, settle)
		}
		return c.Seq(t, waitAny(cw.Watch))
	})
}
