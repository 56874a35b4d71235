package masterworker

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/task"
)

// Master runs for mastership and, while primary, assigns tasks to workers
// and moves the tasks of dead workers back to /tasks.
type Master struct {
	sys *System
	id  string

	primary    atomic.Bool
	assigned   atomic.Int64
	reassigned atomic.Int64
}

// Master returns a master named id (written into the /master node, for
// people reading the tree).
func (sys *System) Master(id string) (*Master, error) {
	if err := checkName("master id", id); err != nil {
		return nil, err
	}
	return &Master{sys: sys, id: id}, nil
}

// ID is the master's id.
func (m *Master) ID() string { return m.id }

// Primary reports whether the master is acting as primary now. It is safe
// from any goroutine.
func (m *Master) Primary() bool { return m.primary.Load() }

// Stats returns how many assignments, and how many moves of a dead
// worker's task back to /tasks, this master's multis made (counted when
// the server confirmed them). Safe from any goroutine.
func (m *Master) Stats() (assigned, reassigned int64) {
	return m.assigned.Load(), m.reassigned.Load()
}

// Run returns a task that sets up the layout, runs for mastership and
// serves as primary once elected. It does not end on its own: it fails
// with the scope's error (canceled, deadline) or with
// task.ErrSessionExpired when the session ends (the /master node went
// with it; run it again on the new session, as Serve does), or with an
// error that a retry cannot settle.
func (m *Master) Run() task.Task[task.Unit] {
	return c.Seq(m.sys.Setup(), task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
		r := &mrun{m: m, s: s, k: k, sess: s.Session()}
		s.OnDone(func(error) { r.stepDown() })
		r.elect()
	}))
}

// dir is the primary's view of a watched directory.
type dir struct {
	names []string
	watch *task.Watch
	stale bool // the watch fired (or none is set): read again
}

// mrun is one run of a master on one session. It lives on the executor
// goroutine.
type mrun struct {
	m    *Master
	s    *task.Scope
	k    task.Cont[task.Unit]
	sess task.Session

	ended   bool
	workers dir
	tasks   dir
	wake    task.Cont[task.Unit] // the parked round, if any
	again   bool                 // an outcome was left open: another round soon
	next    int                  // round-robin position among live workers
}

func (r *mrun) fail(err error) {
	if r.ended {
		return
	}
	r.ended = true
	r.stepDown()
	task.Resume(r.s, r.k, task.Unit{}, err)
}

func (r *mrun) stepDown() { r.m.primary.Store(false) }

// elect creates the ephemeral /master node. Connection loss is settled by
// reading the node: if it exists and our session owns it, we are primary.
func (r *mrun) elect() {
	task.Run(r.s, task.Create(r.m.sys.MasterPath(), []byte(r.m.id), task.Ephemeral), func(_ string, err error) {
		switch {
		case err == nil:
			r.lead()
		case errors.Is(err, task.ErrNodeExists), errors.Is(err, task.ErrConnectionLoss):
			r.watchMaster()
		case errors.Is(err, task.ErrNotSent):
			r.elect()
		default:
			r.fail(err)
		}
	})
}

// watchMaster looks at /master with an exists watch: ours means we are
// primary (a create whose reply was lost); missing means run again;
// another session's means wait for it to go.
func (r *mrun) watchMaster() {
	task.Run(r.s, c.Retry(task.ExistsW(r.m.sys.MasterPath()), retry), func(sw task.StatWatch, err error) {
		switch {
		case err != nil:
			r.fail(err)
		case sw.Stat == nil:
			r.elect()
		case sw.Stat.EphemeralOwner == r.sess.ID:
			r.lead()
		default:
			task.Run(r.s, sw.Watch.Wait(), func(_ task.Event, err error) {
				if err != nil {
					r.fail(err)
					return
				}
				r.elect()
			})
		}
	})
}

// lead serves as primary until the session ends: rounds of reconcile,
// each followed by a wait for a watch to fire.
func (r *mrun) lead() {
	r.m.primary.Store(true)
	r.workers.stale, r.tasks.stale = true, true
	r.round()
}

// arm records a new watch on d and, when it fires, marks d stale and
// wakes the parked round. Exactly one waiter per watch.
func (r *mrun) arm(d *dir, w *task.Watch) {
	d.watch, d.stale = w, false
	task.Run(r.s, w.Wait(), func(_ task.Event, _ error) {
		if d.watch == w {
			d.stale = true
		}
		r.kick()
	})
}

func (r *mrun) kick() {
	if w := r.wake; w != nil {
		r.wake = nil
		w(task.Unit{}, nil)
	}
}

// round re-reads what changed (setting new watches), reassigns the tasks
// of dead workers, assigns the tasks in /tasks, then waits.
func (r *mrun) round() {
	r.again = false
	steps := []func(func()){r.readWorkers, r.readTasks, r.reassignDead, r.assignTasks}
	var run func(i int)
	run = func(i int) {
		if i == len(steps) {
			r.park()
			return
		}
		steps[i](func() { run(i + 1) })
	}
	run(0)
}

// park waits until a watch fires (or, if an outcome was left open,
// a short while) and starts the next round.
func (r *mrun) park() {
	if r.ended {
		return
	}
	var wait task.Task[task.Unit]
	switch {
	case r.again:
		// Re-read /tasks: a task whose assignment failed is still there,
		// and its watch need not fire.
		r.tasks.stale = true
		wait = c.Sleep(100 * time.Millisecond)
	case r.workers.stale || r.tasks.stale:
		wait = task.Done
	default:
		wait = func(s *task.Scope, k task.Cont[task.Unit]) {
			task.Suspend(s, k, func(resume task.Cont[task.Unit]) func() {
				r.wake = resume
				return func() { r.wake = nil }
			})
		}
	}
	task.Run(r.s, wait, func(_ task.Unit, err error) {
		if err != nil {
			r.fail(err)
			return
		}
		r.round()
	})
}

// readWorkers re-reads /workers with a watch when the last watch fired.
// A read that fails with connection loss sets no watch, so it is
// retried until it succeeds (after the reconnect).
func (r *mrun) readWorkers(next func()) {
	if !r.workers.stale {
		next()
		return
	}
	read := c.Retry(task.ChildrenW(r.m.sys.WorkersPath()), retry)
	if canary.On(bugNoRearmWorkers) && r.workers.names != nil {
		read = task.ChildrenW(r.m.sys.WorkersPath())
	}
	task.Run(r.s, read, func(cw task.ChildrenWatch, err error) {
		if err != nil {
			if canary.On(bugNoRearmWorkers) && task.IsRetryable(err) {
				r.workers.stale, r.workers.watch = false, nil // keeps the old list, no watch
				next()
				return
			}
			r.fail(err)
			return
		}
		r.workers.names = cw.Names
		slices.Sort(r.workers.names)
		r.arm(&r.workers, cw.Watch)
		next()
	})
}

// readTasks re-reads /tasks with a watch when the last watch fired.
func (r *mrun) readTasks(next func()) {
	if !r.tasks.stale {
		next()
		return
	}
	task.Run(r.s, c.Retry(task.ChildrenW(r.m.sys.TasksPath()), retry), func(cw task.ChildrenWatch, err error) {
		if err != nil {
			r.fail(err)
			return
		}
		r.tasks.names = cw.Names
		slices.Sort(r.tasks.names)
		r.arm(&r.tasks, cw.Watch)
		next()
	})
}

// reassignDead lists /assign and, for every directory whose worker is not
// in /workers, moves each of its tasks back to /tasks with one multi.
func (r *mrun) reassignDead(next func()) {
	task.Run(r.s, c.Retry(task.Children(r.m.sys.AssignRoot()), retry), func(cl task.ChildList, err error) {
		if err != nil {
			r.fail(err)
			return
		}
		var dead []string
		for _, w := range cl.Names {
			if _, live := slices.BinarySearch(r.workers.names, w); !live {
				dead = append(dead, w)
			}
		}
		slices.Sort(dead)
		ts := make([]task.Task[task.Unit], len(dead))
		for i, w := range dead {
			ts[i] = r.reassignWorker(w)
		}
		r.all(ts, next)
	})
}

// all runs ts together and then next; ts report their own failures
// through r.fail or r.again and never fail themselves unless the scope
// ended.
func (r *mrun) all(ts []task.Task[task.Unit], next func()) {
	if len(ts) == 0 {
		next()
		return
	}
	task.Run(r.s, c.All(ts...), func(_ []task.Unit, err error) {
		if err != nil {
			r.fail(err)
			return
		}
		next()
	})
}

// reassignWorker moves every task of dead worker w back to /tasks.
func (r *mrun) reassignWorker(w string) task.Task[task.Unit] {
	dirPath := r.m.sys.AssignPath(w)
	return c.Then(c.Retry(task.Children(dirPath), retry), func(cl task.ChildList) task.Task[task.Unit] {
		slices.Sort(cl.Names)
		ts := make([]task.Task[task.Unit], len(cl.Names))
		for i, name := range cl.Names {
			ts[i] = r.moveBack(dirPath+"/"+name, name)
		}
		return seqAll(ts)
	})
}

// moveBack is one multi: delete the assignment and recreate the task
// (same name, same data) in /tasks. A task someone else moved already is
// left alone; a lost reply is settled by the next round's reads.
func (r *mrun) moveBack(assigned, name string) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Run(s, c.Retry(task.Get(assigned), retry), func(d task.Data, err error) {
			if errors.Is(err, task.ErrNoNode) {
				k(task.Unit{}, nil)
				return
			}
			if err != nil {
				k(task.Unit{}, err)
				return
			}
			multi := task.Multi(
				&task.DeleteRequest{Path: assigned, Version: d.Stat.Version},
				&task.CreateRequest{Path: r.m.sys.TasksPath() + "/" + name, Data: d.Data, Mode: task.Persistent, ACL: task.OpenACL},
			)
			task.Run(s, multi, func(_ []task.MultiResult, err error) {
				r.settle(err, &r.m.reassigned, k)
			})
		})
	}
}

// settle handles the outcome of an assignment or a move: success counts;
// a lost reply or a node moved by someone else (no node, node exists, bad
// version) is left to the next round's reads; session and scope errors
// end the run.
func (r *mrun) settle(err error, count *atomic.Int64, k task.Cont[task.Unit]) {
	switch {
	case err == nil:
		count.Add(1)
	case task.IsRetryable(err):
		r.again = true
	case errors.Is(err, task.ErrNoNode), errors.Is(err, task.ErrNodeExists), errors.Is(err, task.ErrBadVersion):
		r.again = true
	default:
		k(task.Unit{}, err)
		return
	}
	k(task.Unit{}, nil)
}

// assignTasks gives every task in /tasks to a live worker, round robin,
// each with one multi that creates the assignment and deletes the task.
func (r *mrun) assignTasks(next func()) {
	live := r.workers.names
	if len(live) == 0 || len(r.tasks.names) == 0 {
		next()
		return
	}
	ts := make([]task.Task[task.Unit], len(r.tasks.names))
	for i, name := range r.tasks.names {
		w := live[r.next%len(live)]
		r.next++
		ts[i] = r.assign(name, w)
	}
	// Tasks assigned now leave /tasks; the watch will say so, but the list
	// is not trusted until re-read.
	r.tasks.names = nil
	r.all(ts, next)
}

func (r *mrun) assign(name, w string) task.Task[task.Unit] {
	taskPath := r.m.sys.TasksPath() + "/" + name
	assigned := r.m.sys.AssignPath(w) + "/" + name
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Run(s, c.Retry(task.Get(taskPath), retry), func(d task.Data, err error) {
			if errors.Is(err, task.ErrNoNode) {
				k(task.Unit{}, nil) // assigned already (by us, before a lost reply, or by another master)
				return
			}
			if err != nil {
				k(task.Unit{}, err)
				return
			}
			create := &task.CreateRequest{Path: assigned, Data: d.Data, Mode: task.Persistent, ACL: task.OpenACL}
			del := &task.DeleteRequest{Path: taskPath, Version: d.Stat.Version}
			if canary.On(bugAssignTwoOps) {
				task.Run(s, task.Multi(create), func(_ []task.MultiResult, err error) {
					if err != nil {
						r.settle(err, &r.m.assigned, k)
						return
					}
					task.Run(s, task.Multi(del), func(_ []task.MultiResult, err error) {
						r.settle(err, &r.m.assigned, k)
					})
				})
				return
			}
			task.Run(s, task.Multi(create, del), func(_ []task.MultiResult, err error) {
				r.settle(err, &r.m.assigned, k)
			})
		})
	}
}

// String describes the master, for logs.
func (m *Master) String() string { return fmt.Sprintf("master %s of %s", m.id, m.sys.Root()) }
