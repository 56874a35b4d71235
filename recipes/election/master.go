package election

import (
	"bytes"
	"errors"
	"fmt"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Master is the simpler "/master" pattern: whoever creates one ephemeral
// node leads; the others watch it and run again when it is deleted. Every
// waiter is woken by a deletion (a herd, bounded by the number of
// candidates); use Election for many candidates. A Master holds no state
// of its own.
//
// Beside the master node, a persistent epoch node (the master node's path
// with EpochSuffix) counts the masters: a candidate becomes master with
// one multi that creates the master node and writes the epoch node, so
// the epoch node's version is the master's epoch and its data names the
// campaign that made it. A master node at a fixed path starts at version
// 0 in every incarnation and so identifies no master; the epoch does.
// Fenced writes check it and so does Resign's delete: a deposed master's
// late write or delete is refused once anyone else has become master.
type Master struct {
	path  string
	epoch string
	cfg   Config
}

// EpochSuffix is appended to a Master's path to name its epoch node.
const EpochSuffix = ".epoch"

// NewMaster returns the master election on node path (its parent is
// created, persistent, on first use, and so is the epoch node
// path+EpochSuffix).
func NewMaster(path string, cfg Config) (*Master, error) {
	if err := task.ValidatePath(path, false); err != nil {
		return nil, fmt.Errorf("election: master node %q: %w", path, err)
	}
	if path == "/" {
		return nil, fmt.Errorf("election: master node %q: %w", path, task.ErrInvalidPath)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Master{path: path, epoch: path + EpochSuffix, cfg: cfg}, nil
}

// Path is the master node's path.
func (m *Master) Path() string { return m.path }

// EpochPath is the epoch node's path: its version is the current
// master's epoch.
func (m *Master) EpochPath() string { return m.epoch }

// Campaign returns a task that waits until this candidate is master and
// succeeds with its leadership. See the package documentation for the
// protocol. It fails with the scope's error on deadline or cancel (a
// master node of ours is then deleted by a cleanup that outlives the
// deadline and retries past connection loss), with task.ErrSessionExpired
// when the session ends, or with an operation's error a retry cannot
// settle.
func (m *Master) Campaign() task.Task[*Leadership] {
	return func(s *task.Scope, k task.Cont[*Leadership]) {
		sc := s.Child()
		r := &run{m: m, s: sc, sess: s.Session(), id: []byte(zkops.NewID(s.Rand(), s.Rand())), b: followBlinks(sc)}
		r.undo = sc.Defer(r.cleanup())
		task.RunIn(sc, task.Task[*Leadership](func(_ *task.Scope, k task.Cont[*Leadership]) {
			r.k = k
			r.create()
		}), until(r.b, k))
	}
}

// run is one campaign for the master node. Executor goroutine.
type run struct {
	m    *Master
	s    *task.Scope
	sess task.Session
	// id names this campaign: the epoch node's data once it made the
	// master node, so that a lost reply is settled by reading it.
	id   []byte
	undo func()
	k    task.Cont[*Leadership]
	b    *blinks
	// retried: a create was sent before whose outcome is unknown
	retried bool
}

func (r *run) fail(err error) { task.Resume(r.s, r.k, nil, err) }

// create tries to become master: one multi creates the master node and
// writes the epoch node (its version is then our epoch, its data our id,
// its mzxid the master node's czxid). NodeExists: watch the master node;
// a missing epoch node or parent: create them; a lost reply: read the
// nodes to learn who made the master node.
func (r *run) create() {
	ops := []task.MultiOp{
		&task.CreateRequest{Path: r.m.path, Data: r.m.cfg.Data, Mode: task.Ephemeral, ACL: task.OpenACL},
		&task.SetDataRequest{Path: r.m.epoch, Data: r.id, Version: task.AnyVersion},
	}
	task.Run(r.s, task.Multi(ops...), func(rs []task.MultiResult, err error) {
		var me *task.MultiError
		switch {
		case err == nil:
			r.verify(rs[1].Stat)
		case errors.As(err, &me) && errors.Is(me.Err, task.ErrNodeExists):
			r.watch()
		case errors.As(err, &me) && errors.Is(me.Err, task.ErrNoNode):
			task.Run(r.s, r.ensureEpoch(), func(_ task.Unit, err error) {
				if err != nil {
					r.fail(err)
					return
				}
				r.create()
			})
		case errors.Is(err, task.ErrConnectionLoss), errors.Is(err, task.ErrNotSent):
			r.retried = true
			r.watch()
		default:
			r.fail(err)
		}
	})
}

// ensureEpoch creates the epoch node and its parent if missing.
func (r *run) ensureEpoch() task.Task[task.Unit] {
	return zkops.EnsurePath(r.m.epoch)
}

// watch reads the master node with a watch. Missing: create again. Made
// by this campaign (a create whose reply was lost; the epoch node says
// so): lead. Anyone else's, also another campaign's on our session: wait
// until it changes, then run again.
func (r *run) watch() {
	at := r.b.n
	task.Run(r.s, c.Retry(task.ExistsW(r.m.path), retry), func(sw task.StatWatch, err error) {
		switch {
		case err != nil:
			r.fail(err)
		case sw.Stat == nil:
			r.create()
		case sw.Stat.EphemeralOwner == r.sess.ID || (canary.On(bugSkipOwnerCheck) && r.retried):
			st := *sw.Stat
			task.Run(r.s, c.Retry(task.Get(r.m.epoch), retry), func(ep task.Data, err error) {
				switch {
				case err != nil && !errors.Is(err, task.ErrNoNode):
					r.fail(err)
				case r.b.n != at:
					r.watch() // read before a suspension: read again
				case err == nil && canary.On(bugSkipOwnerCheck) && r.retried:
					// the bug: after a lost reply, a master node is
					// taken to be the one our create made
					r.granted(st, ep.Stat)
				case err == nil && r.made(st, ep):
					r.granted(st, ep.Stat)
				default:
					r.await(sw.Watch)
				}
			})
		default:
			r.await(sw.Watch)
		}
	})
}

// made reports whether the master node st was created by this campaign's
// multi: the epoch node was last written by it (our id) in the same
// transaction (its mzxid is the node's czxid), and the node is ours.
func (r *run) made(st task.Stat, ep task.Data) bool {
	return st.EphemeralOwner == r.sess.ID && ep.Stat.Mzxid == st.Czxid && bytes.Equal(ep.Data, r.id)
}

func (r *run) await(w *task.Watch) {
	r.retried = false
	task.Run(r.s, w.Wait(), func(_ task.Event, err error) {
		if err != nil {
			r.fail(err)
			return
		}
		r.create()
	})
}

// verify reads the node our multi created and leads only if it is still
// that node (the epoch's mzxid is its czxid), its owner is our session,
// and that session is still the executor's current one.
func (r *run) verify(ep task.Stat) {
	at := r.b.n
	task.Run(r.s, c.Retry(task.Exists(r.m.path), retry), func(st *task.Stat, err error) {
		switch {
		case err != nil:
			r.fail(err)
		case r.b.n != at:
			r.verify(ep) // read before a suspension: read again
		case st == nil:
			r.create()
		case canary.On(bugSkipOwnerCheck) || (st.EphemeralOwner == r.sess.ID && st.Czxid == ep.Mzxid && r.s.IsCurrent(r.sess)):
			r.granted(*st, ep)
		default:
			r.watch()
		}
	})
}

func (r *run) granted(st task.Stat, ep task.Stat) {
	if ep.Version == task.AnyVersion {
		// The epoch's version wrapped to -1, which a check would take as
		// "any version": step aside and campaign again (the next write
		// brings it to 0). Once in 2^32 masters.
		task.Run(r.s, deleteMaster(r.m.path, r.m.epoch, ep.Version, st), func(_ task.Unit, err error) {
			if err != nil {
				r.fail(err)
				return
			}
			r.create()
		})
		return
	}
	r.undo()
	l := r.m.cfg.newLeadership(r.m.path, st, r.sess)
	l.epoch, l.epochVersion = r.m.epoch, ep.Version
	l.start(r.s)
	task.Resume(r.s, r.k, l, nil)
}

// cleanup deletes the master node of a campaign that did not end in
// leadership, if this campaign made it (a create whose reply was lost,
// or leadership found as the scope ended). It runs as a flow of its own.
func (r *run) cleanup() task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		if s.Session().Epoch != r.sess.Epoch {
			k(task.Unit{}, nil) // the session ended: its ephemerals went with it
			return
		}
		task.Run(s, c.Retry(task.Exists(r.m.path), retry), func(st *task.Stat, err error) {
			if err != nil || st == nil || st.EphemeralOwner != r.sess.ID {
				task.Run(s, goneOK(err), k)
				return
			}
			task.Run(s, c.Retry(task.Get(r.m.epoch), retry), func(ep task.Data, err error) {
				if err != nil || !r.made(*st, ep) {
					task.Run(s, goneOK(err), k)
					return
				}
				task.Run(s, deleteMaster(r.m.path, r.m.epoch, ep.Stat.Version, *st), k)
			})
		})
	}
}

func goneOK(err error) task.Task[task.Unit] {
	if err == nil {
		return task.Done
	}
	return zkops.GoneOK(err)
}

// deleteMaster deletes the master node st of epoch version ev: one multi
// checks the epoch node at ev and deletes the node, so it is refused once
// anyone else has become master (every master writes the epoch node). It
// is retried as it is after a lost reply: if the first was applied, the
// retry finds the node gone (no new master) or the epoch moved (a new
// master). If the epoch node itself is gone (deleted by hand), the node is
// deleted only if it is still the incarnation st (zkops.DeleteNode).
func deleteMaster(path, epoch string, ev int32, st task.Stat) task.Task[task.Unit] {
	multi := c.Retry(task.Multi(
		&task.CheckRequest{Path: epoch, Version: ev},
		&task.DeleteRequest{Path: path, Version: st.Version},
	), retry)
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Run(s, multi, func(_ []task.MultiResult, err error) {
			var me *task.MultiError
			switch {
			case err == nil:
				k(task.Unit{}, nil)
			case errors.As(err, &me) && me.Index == 0 && errors.Is(me.Err, task.ErrBadVersion):
				k(task.Unit{}, nil) // a later master: ours went before it
			case errors.As(err, &me) && me.Index == 1 && errors.Is(me.Err, task.ErrNoNode):
				k(task.Unit{}, nil) // already gone
			case errors.As(err, &me):
				task.Run(s, zkops.DeleteNode(path, st), k)
			default:
				task.Run(s, zkops.GoneOK(err), k)
			}
		})
	}
}

// Leader returns a task that reads the master node's data, or fails with
// ErrNoLeader when there is no master.
func (m *Master) Leader() task.Task[[]byte] {
	get := c.Map(c.Retry(task.Get(m.path), retry), func(d task.Data) []byte { return d.Data })
	return c.Catch(get, func(err error) task.Task[[]byte] {
		if errors.Is(err, task.ErrNoNode) {
			return task.Fail[[]byte](fmt.Errorf("election: %s: %w", m.path, ErrNoLeader))
		}
		return task.Fail[[]byte](err)
	})
}
