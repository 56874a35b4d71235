package election

import (
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
type Master struct {
	path string
	cfg  Config
}

// NewMaster returns the master election on node path (its parent is
// created, persistent, on first use).
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
	return &Master{path: path, cfg: cfg}, nil
}

// Path is the master node's path.
func (m *Master) Path() string { return m.path }

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
		r := &run{m: m, s: sc, sess: s.Session()}
		r.undo = sc.Defer(zkops.DeleteOwned(m.path, r.sess.ID))
		task.RunIn(sc, task.Task[*Leadership](func(_ *task.Scope, k task.Cont[*Leadership]) {
			r.k = k
			r.create()
		}), k)
	}
}

// run is one campaign for the master node. Executor goroutine.
type run struct {
	m    *Master
	s    *task.Scope
	sess task.Session
	undo func()
	k    task.Cont[*Leadership]
	// retried: a create was sent before whose outcome is unknown
	retried bool
}

func (r *run) fail(err error) { task.Resume(r.s, r.k, nil, err) }

// create tries to become master. NodeExists: watch the master node; a lost
// reply: read the node to learn who owns it.
func (r *run) create() {
	req := &task.CreateRequest{Path: r.m.path, Data: r.m.cfg.Data, Mode: task.Ephemeral}
	task.Run(r.s, task.CreateWith(req), func(_ task.Created, err error) {
		switch {
		case err == nil:
			r.verify()
		case errors.Is(err, task.ErrNoNode):
			task.Run(r.s, zkops.EnsurePath(task.Parent(r.m.path)), func(_ task.Unit, err error) {
				if err != nil {
					r.fail(err)
					return
				}
				r.create()
			})
		case errors.Is(err, task.ErrNodeExists):
			r.watch()
		case errors.Is(err, task.ErrConnectionLoss), errors.Is(err, task.ErrNotSent):
			r.retried = true
			r.watch()
		default:
			r.fail(err)
		}
	})
}

// watch reads the master node with a watch: ours (a create whose reply
// was lost): lead; gone: create again; someone else's: wait until it
// changes, then run again.
func (r *run) watch() {
	task.Run(r.s, c.Retry(task.ExistsW(r.m.path), retry), func(sw task.StatWatch, err error) {
		switch {
		case err != nil:
			r.fail(err)
		case sw.Stat == nil:
			r.create()
		case sw.Stat.EphemeralOwner == r.sess.ID:
			r.granted(*sw.Stat)
		case canary.On(bugSkipOwnerCheck) && r.retried:
			// the bug: after a lost reply, a master node is taken to be
			// the one our create made
			r.granted(*sw.Stat)
		default:
			r.retried = false
			task.Run(r.s, sw.Watch.Wait(), func(_ task.Event, err error) {
				if err != nil {
					r.fail(err)
					return
				}
				r.create()
			})
		}
	})
}

// verify reads the node we created and leads only if its owner is our
// session, still the executor's current one.
func (r *run) verify() {
	task.Run(r.s, c.Retry(task.Exists(r.m.path), retry), func(st *task.Stat, err error) {
		switch {
		case err != nil:
			r.fail(err)
		case st == nil:
			r.create()
		case canary.On(bugSkipOwnerCheck) || (st.EphemeralOwner == r.sess.ID && r.s.IsCurrent(r.sess)):
			r.granted(*st)
		default:
			r.watch()
		}
	})
}

func (r *run) granted(st task.Stat) {
	r.undo()
	l := r.m.cfg.newLeadership(r.m.path, st, r.sess)
	l.start(r.s)
	task.Resume(r.s, r.k, l, nil)
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
