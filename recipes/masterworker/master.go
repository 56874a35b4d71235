package masterworker

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/cache"
	"github.com/zkflow/zkflow/recipes/election"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Master runs for mastership and, while primary, assigns tasks to workers
// and moves the tasks of dead workers back to /tasks. Mastership is
// recipes/election's Master on the /master node.
//
// A Master runs on one executor at a time (its Run flows must not
// overlap).
type Master struct {
	sys *System
	id  string
	el  *election.Master
	cur *term // the current primary term; executor goroutine only

	primary    atomic.Bool
	terms      atomic.Int64
	assigned   atomic.Int64
	reassigned atomic.Int64
}

// Master returns a master named id (written into the /master node, which
// election's Leader reads).
func (sys *System) Master(id string) (*Master, error) {
	if err := checkName("master id", id); err != nil {
		return nil, err
	}
	m := &Master{sys: sys, id: id}
	el, err := election.NewMaster(sys.MasterPath(), election.WithData([]byte(id)), election.WithOnState(m.onState), election.WithACL(sys.acl))
	if err != nil {
		return nil, err
	}
	m.el = el
	return m, nil
}

// onState ends the primary term when its leadership ends (lost, given up
// while disconnected, or resigned). Executor goroutine.
func (m *Master) onState(l *election.Leadership, st election.State) {
	if st == election.Ended && m.cur != nil && m.cur.l == l {
		m.cur.ps.Cancel(l.Err())
	}
}

// ID is the master's id.
func (m *Master) ID() string { return m.id }

// Primary reports whether the master is acting as primary now. It is safe
// from any goroutine.
func (m *Master) Primary() bool { return m.primary.Load() }

// Stats returns how many terms as primary this master began, and how many
// assignments and moves of a dead worker's task back to /tasks its
// multis made (counted when the server confirmed them). Safe from any
// goroutine.
func (m *Master) Stats() (terms, assigned, reassigned int64) {
	return m.terms.Load(), m.assigned.Load(), m.reassigned.Load()
}

// Run returns a task that sets up the layout, runs for mastership and
// serves as primary once elected, running for mastership again whenever
// a term ends while the session lives (leadership given up during a long
// disconnection, or lost). It does not end on its own: it fails with the
// scope's error (canceled, deadline; a mastership held is then given up
// by a flow of its own, so a backup takes over at once), with
// task.ErrSessionExpired when
// the session ends (run it again on the new session, as Serve does), or
// with an error that a retry cannot settle.
func (m *Master) Run() task.Task[task.Unit] {
	return c.Seq(m.sys.Setup(), task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
		var campaign func()
		campaign = func() {
			task.Run(s, m.el.Campaign(), func(l *election.Leadership, err error) {
				if err != nil {
					k(task.Unit{}, err)
					return
				}
				m.serve(s, l, func(err error) {
					switch {
					case errors.Is(err, task.ErrSessionExpired) || errors.Is(err, task.ErrClosed):
						// The session ended (its events may still be on
						// their way): nothing more runs on it.
						k(task.Unit{}, err)
					case s.Err() != nil:
						// Canceled or past its deadline: the mastership is
						// given up as a flow of its own (Run would not start
						// a task on an ended scope), so a backup takes over
						// now rather than when the session ends.
						task.Go(s, l.Resign(), nil)
						k(task.Unit{}, err)
					case !errors.Is(err, election.ErrLost) && !errors.Is(err, election.ErrResigned):
						task.Run(s, l.Resign(), func(task.Unit, error) { k(task.Unit{}, err) })
					default:
						campaign() // the term ended, the session lives: run again
					}
				})
			})
		}
		campaign()
	}))
}

// dir is the primary's view of a watched directory.
type dir struct {
	names []string
	watch *task.Watch
	stale bool // the watch fired (or none is set): read again
}

// term is one term as primary: it lives on the executor goroutine, in a
// scope of its own that ends when the leadership does.
type term struct {
	m     *Master
	l     *election.Leadership
	s     *task.Scope // the Run flow's
	ps    *task.Scope // the term's: ends with the leadership
	ended bool
	done  func(error)

	workers  dir // names from the cache; stale: changed since the last round
	tasks    dir
	wc       *cache.ChildrenCache // follows /workers
	started  bool                 // wc's first snapshot is in
	unsub    func()
	deaf     bool                 // the session was suspended (bugNoRearmWorkers ignores the cache from then on)
	blinked  bool                 // suspended since the last reconnect: read /tasks again once connected
	blinks   int                  // suspensions so far: a /tasks read sent before one is stale
	wake     task.Cont[task.Unit] // the parked round, if any
	again    bool                 // an outcome was left open: another round soon
	next     int                  // round-robin position among live workers
	step     int                  // the round's step under way (round)
	nextStep func()               // stepDone, the steps' next

	// Made once per term, for every round: the listings of /tasks
	// (with a watch) and /assign, retried, the continuations of the
	// steps that send them and of park, and park's wait.
	listAssign            task.Task[task.ChildList]
	listTasksW            task.Task[task.ChildrenWatch]
	onTasks               task.Cont[task.ChildrenWatch]
	onAssign              task.Cont[task.ChildList]
	tasksGen              int    // blinks as the /tasks read was sent
	tasksNext, assignNext func() // the steps' next
	parkWait              task.Task[task.Unit]
	parkStart             func(task.Cont[task.Unit]) func()
	unpark                func()
	onParked              task.Cont[task.Unit]
}

// serve runs a term as primary until it fails; done gets why (an error
// wrapping election.ErrLost when the leadership ended).
func (m *Master) serve(s *task.Scope, l *election.Leadership, done func(error)) {
	r := &term{m: m, l: l, s: s, ps: s.Child(), done: done}
	m.cur = r
	m.terms.Add(1)
	// The term ends when the cache ends on its own (an error no retry
	// settles, such as an operator's ACL refusing a read: recipes/cache,
	// Errors): it would otherwise go on with a snapshot nothing updates
	// any more, and a worker that died would keep its tasks while a new
	// one got none. (Its own Stop, in fail, comes after the term ended.)
	wc, err := cache.NewChildren(m.sys.WorkersPath(), cache.WithOnSynced(func() { r.workersSynced() }),
		cache.WithOnEnd(func(err error) { r.fail(err) }))
	if err != nil {
		r.fail(err)
		return
	}
	r.wc = wc
	r.unsub = r.ps.Subscribe(func(ev task.Event) {
		switch ev.State {
		case task.StateSuspended:
			r.deaf = true // only the canary listens
			r.blinked = true
			r.blinks++
		case task.StateConnected:
			// Once the tasks directory's counter has run out, a create
			// under it no longer moves its pzxid, and the server, which
			// compares the pzxid on reconnect, does not fire again a
			// child watch whose notification went with the connection:
			// read /tasks again after every reconnect.
			if r.blinked {
				r.blinked = false
				r.tasks.stale = true
				r.kick()
			}
		}
	})
	if err := l.Err(); err != nil {
		r.fail(err)
		return
	}
	m.primary.Store(true)
	r.workers.stale, r.tasks.stale = true, true
	r.round()
}

func (r *term) fail(err error) {
	if r.ended {
		return
	}
	r.ended = true
	if r.unsub != nil {
		r.unsub()
	}
	r.m.primary.Store(false)
	if r.m.cur == r {
		r.m.cur = nil
	}
	if perr := r.ps.Err(); perr != nil {
		err = perr // the leadership ended: say so, not how a step noticed
	}
	r.ps.Close()
	// The cache's flows are not the term's (they follow the executor's
	// sessions): stop them, in a flow of their own. Stopping is local; an
	// executor that is closing has ended them already.
	if r.wc != nil && !errors.Is(err, task.ErrClosed) {
		task.Go(r.s, r.wc.Stop(), func(task.Unit, error) {})
	}
	r.done(err)
}

// arm records a new watch on d and, when it fires, marks d stale and
// wakes the parked round. Exactly one waiter per watch.
func (r *term) arm(d *dir, w *task.Watch) {
	d.watch, d.stale = w, false
	task.Run(r.ps, w.Wait(), func(_ task.Event, _ error) {
		if d.watch == w {
			d.stale = true
		}
		r.kick()
	})
}

func (r *term) kick() {
	if w := r.wake; w != nil {
		r.wake = nil
		w(task.Unit{}, nil)
	}
}

// round re-reads what changed (setting new watches), reassigns the tasks
// of dead workers, assigns the tasks in /tasks, then waits.
func (r *term) round() {
	r.again = false
	r.step = 0
	r.runStep()
}

// runStep runs the round's step r.step, whose next is r.nextStep (made
// once per term): each step calls it once, or ends the term (fail).
// A term runs one round at a time.
func (r *term) runStep() {
	if r.nextStep == nil {
		r.nextStep = r.stepDone
	}
	switch r.step {
	case 0:
		r.readWorkers(r.nextStep)
	case 1:
		r.readTasks(r.nextStep)
	case 2:
		r.reassignDead(r.nextStep)
	case 3:
		r.assignTasks(r.nextStep)
	default:
		r.park()
	}
}

func (r *term) stepDone() {
	r.step++
	r.runStep()
}

// park waits until a watch fires (or, if an outcome was left open,
// a short while) and starts the next round.
func (r *term) park() {
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
		if r.parkWait == nil {
			r.parkWait, r.parkStart, r.unpark = r.waitWake, r.startWait, r.clearWake
		}
		wait = r.parkWait
	}
	if r.onParked == nil {
		r.onParked = r.parked
	}
	task.Run(r.ps, wait, r.onParked)
}

// waitWake is park's wait for a watch to fire (kick).
func (r *term) waitWake(s *task.Scope, k task.Cont[task.Unit]) { task.Suspend(s, k, r.parkStart) }

func (r *term) startWait(resume task.Cont[task.Unit]) func() {
	r.wake = resume
	return r.unpark
}

func (r *term) clearWake() { r.wake = nil }

func (r *term) parked(_ task.Unit, err error) {
	if err != nil {
		r.fail(err)
		return
	}
	r.round()
}

// readWorkers takes the live workers from the term's ChildrenCache of
// /workers (recipes/cache), started on the first round: the cache lists
// /workers with a child watch, re-arms it after every notification and
// repeats a listing that failed with connection loss (a failed call sets
// no watch), and across a reconnect; each consistent snapshot it reaches
// marks the workers changed and wakes the parked round (workersSynced).
func (r *term) readWorkers(next func()) {
	if r.started {
		r.workers.stale = false
		next()
		return
	}
	task.Run(r.ps, r.wc.Start(), func(wc *cache.ChildrenCache, err error) {
		if err != nil {
			r.fail(err)
			return
		}
		r.started = true
		r.workers.names = names(wc.Current())
		r.workers.stale = false
		next()
	})
}

// workersSynced takes a new consistent snapshot of /workers. Executor
// goroutine.
func (r *term) workersSynced() {
	if r.ended || !r.started || canary.On(bugNoRearmWorkers) && r.deaf {
		return
	}
	r.workers.names = names(r.wc.Current())
	r.workers.stale = true
	r.kick()
}

// names returns the sorted names of nodes.
func names(nodes []cache.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Name()
	}
	slices.Sort(out)
	return out
}

// readTasks re-reads /tasks with a watch when the last watch fired. A
// tasks directory that is gone (an operator deleted it while it was
// empty) is made again, then read.
func (r *term) readTasks(next func()) {
	if !r.tasks.stale {
		next()
		return
	}
	// A read sent before a suspension may be answered (its outcome
	// handled) only after the reconnect that marked /tasks stale: its
	// watch may be the one that will not fire again, so it is read again.
	r.tasksGen, r.tasksNext = r.blinks, next
	if r.listTasksW == nil {
		r.listTasksW, r.onTasks = c.Retry(task.ChildrenW(r.m.sys.TasksPath()), retry), r.tasksRead
	}
	task.Run(r.ps, r.listTasksW, r.onTasks)
}

func (r *term) tasksRead(cw task.ChildrenWatch, err error) {
	gen, next := r.tasksGen, r.tasksNext
	if errors.Is(err, task.ErrNoNode) {
		task.Run(r.ps, r.m.sys.mkdir(r.m.sys.TasksPath()), func(_ task.Unit, err error) {
			if err != nil {
				r.fail(err)
				return
			}
			r.readTasks(next)
		})
		return
	}
	if err != nil {
		r.fail(err)
		return
	}
	r.tasks.names = cw.Names
	slices.Sort(r.tasks.names)
	r.arm(&r.tasks, cw.Watch)
	if r.blinks != gen {
		r.tasks.stale = true
	}
	next()
}

// maxDeadPerRound bounds the dead workers' directories one round handles.
const maxDeadPerRound = 32

// reassignDead lists /assign and, for every directory whose worker is not
// in /workers, moves each of its tasks back to /tasks with one multi.
func (r *term) reassignDead(next func()) {
	r.assignNext = next
	if r.listAssign == nil {
		r.listAssign, r.onAssign = c.Retry(task.Children(r.m.sys.AssignRoot()), retry), r.assignRead
	}
	task.Run(r.ps, r.listAssign, r.onAssign)
}

func (r *term) assignRead(cl task.ChildList, err error) {
	next := r.assignNext
	if errors.Is(err, task.ErrNoNode) && !canary.On(bugNoDirAgain) {
		// Deleted while empty (an operator cleaning up): no task is
		// assigned. Made again for the assignments to come.
		task.Run(r.ps, r.m.sys.mkdir(r.m.sys.AssignRoot()), func(_ task.Unit, err error) {
			if err != nil {
				r.fail(err)
				return
			}
			next()
		})
		return
	}
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
	if len(dead) > maxDeadPerRound {
		// Bounded work per round (after a storm of crashes there may
		// be thousands): the rest in the next round, shortly.
		dead = dead[:maxDeadPerRound]
		r.again = true
	}
	ts := make([]task.Task[task.Unit], len(dead))
	for i, w := range dead {
		ts[i] = r.reassignWorker(w)
	}
	r.all(ts, next)
}

// all runs ts together and then next; ts report their own failures
// through r.fail or r.again and never fail themselves unless the scope
// ended.
func (r *term) all(ts []task.Task[task.Unit], next func()) {
	if len(ts) == 0 {
		next()
		return
	}
	task.Run(r.ps, c.All(ts...), func(_ []task.Unit, err error) {
		if err != nil {
			r.fail(err)
			return
		}
		next()
	})
}

// reassignWorker moves every task of dead worker w back to /tasks.
func (r *term) reassignWorker(w string) task.Task[task.Unit] {
	dirPath := r.m.sys.AssignPath(w)
	list := c.Catch(c.Retry(task.Children(dirPath), retry), func(err error) task.Task[task.ChildList] {
		if errors.Is(err, task.ErrNoNode) {
			// Gone since /assign was listed (deleted while empty):
			// nothing to move back.
			return task.Value(task.ChildList{}) // Czxid 0: no node
		}
		return task.Fail[task.ChildList](err)
	})
	return c.Then(list, func(cl task.ChildList) task.Task[task.Unit] {
		if cl.Stat.Czxid == 0 {
			return task.Done
		}
		slices.Sort(cl.Names)
		ts := make([]task.Task[task.Unit], len(cl.Names), len(cl.Names)+1)
		for i, name := range cl.Names {
			ts[i] = r.moveBack(dirPath+"/"+name, name)
		}
		// Then the empty directory goes, so dead workers do not pile up.
		// One that is not empty (a task assigned meanwhile) stays for the
		// next round; one whose worker registered meanwhile (our list of
		// workers is older) is made again by that worker.
		// A worker registered since our list was read keeps its directory.
		del := c.Then(c.Retry(task.Exists(r.m.sys.WorkersPath()+"/"+w), retry), func(st *task.Stat) task.Task[task.Unit] {
			if st != nil {
				return task.Done
			}
			// The incarnation listed only: after a lost reply, a directory
			// its worker made again since is left alone.
			return zkops.DeleteNode(dirPath, cl.Stat)
		})
		rmdir := c.Catch(del, func(err error) task.Task[task.Unit] {
			if errors.Is(err, task.ErrNoNode) || errors.Is(err, task.ErrNotEmpty) {
				return task.Done
			}
			return task.Fail[task.Unit](err)
		})
		return seqAll(append(ts, rmdir))
	})
}

// moveBack is one multi: delete the assignment and recreate the task
// (same name, same data) in /tasks. A task someone else moved already is
// left alone; a lost reply is settled by the next round's reads.
func (r *term) moveBack(assigned, name string) task.Task[task.Unit] {
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
			back := r.m.sys.TasksPath() + "/" + name
			multi := r.fenced(
				&task.DeleteRequest{Path: assigned, Version: d.Stat.Version},
				&task.CreateRequest{Path: back, Data: d.Data, Mode: task.Persistent, ACL: r.m.sys.acl.For(back)},
			)
			task.Run(s, multi, func(_ []task.MultiResult, err error) {
				if errors.Is(err, task.ErrDataTooLarge) {
					// The move, the task's data with the ACL WithACL gives
					// in /tasks (which may be longer than its assignment's),
					// is over the server's limit (refused before it was
					// sent): it can never be moved back. It ends with a
					// failed status instead of ending the term (and every
					// master's after it), as in assign.
					msg := fmt.Sprintf("masterworker: task %s: its move back to the tasks directory (%d bytes of data) is over the server's packet limit", name, len(d.Data))
					task.Run(s, r.failTask(name, assigned, d, msg), func(_ task.Unit, err error) {
						r.settle(err, &r.m.reassigned, k)
					})
					return
				}
				r.settle(err, &r.m.reassigned, k)
			})
		})
	}
}

// fenced is the primary's multi of ops with the check on its lease
// (election's Leadership.Fenced): ZooKeeper refuses it once anyone else
// is primary, however late it arrives.
func (r *term) fenced(ops ...task.MultiOp) task.Task[[]task.MultiResult] {
	if canary.On(bugUnfencedMoves) {
		return task.Multi(ops...)
	}
	return r.l.Fenced(ops...)
}

// settle handles the outcome of an assignment or a move: success counts;
// a lost reply or a node moved by someone else (no node, node exists, bad
// version) is left to the next round's reads; session and scope errors
// end the run.
func (r *term) settle(err error, count *atomic.Int64, k task.Cont[task.Unit]) {
	switch {
	case err == nil:
		count.Add(1)
	case errors.Is(err, election.ErrLost):
		k(task.Unit{}, err) // the master node is not ours: the term ends
		return
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
func (r *term) assignTasks(next func()) {
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

func (r *term) assign(name, w string) task.Task[task.Unit] {
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
			create := &task.CreateRequest{Path: assigned, Data: d.Data, Mode: task.Persistent, ACL: r.m.sys.acl.For(assigned)}
			del := &task.DeleteRequest{Path: taskPath, Version: d.Stat.Version}
			if canary.On(bugAssignTwoOps) {
				task.Run(s, r.l.Fenced(create), func(_ []task.MultiResult, err error) {
					if err != nil {
						r.settle(err, &r.m.assigned, k)
						return
					}
					task.Run(s, r.l.Fenced(del), func(_ []task.MultiResult, err error) {
						r.settle(err, &r.m.assigned, k)
					})
				})
				return
			}
			task.Run(s, r.fenced(create, del), func(_ []task.MultiResult, err error) {
				if errors.Is(err, task.ErrDataTooLarge) {
					// The assignment, the task's data with a longer
					// path and the fence, is over the server's limit
					// (refused before it was sent): it can never be
					// assigned. It ends with a failed status instead
					// of ending the term (and every master's after it).
					msg := fmt.Sprintf("masterworker: task %s: its assignment (%d bytes of data) is over the server's packet limit", name, len(d.Data))
					task.Run(s, r.failTask(name, taskPath, d, msg), func(_ task.Unit, err error) {
						r.settle(err, &r.m.assigned, k)
					})
					return
				}
				r.settle(err, &r.m.assigned, k)
			})
		})
	}
}

// failTask writes a failed status for the task name, whose move is too
// large to send, with message msg, and deletes the task where it is (at
// path, in /tasks or an assignment directory, read as d), in one fenced
// multi.
func (r *term) failTask(name, path string, d task.Data, msg string) task.Task[task.Unit] {
	status := r.m.sys.StatusPath(name)
	res := Result{Data: []byte(msg), Failed: true}
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		multi := r.fenced(
			&task.CreateRequest{Path: status, Data: encodeResult(res), Mode: task.Persistent, ACL: r.m.sys.acl.For(status)},
			&task.DeleteRequest{Path: path, Version: d.Stat.Version},
		)
		task.Run(s, multi, func(_ []task.MultiResult, err error) {
			var me *task.MultiError
			if errors.As(err, &me) && me.Index == 0 && errors.Is(err, task.ErrNoNode) {
				// The status directory was deleted while empty: make it
				// again and write.
				task.Run(s, c.Seq(r.m.sys.mkdir(r.m.sys.StatusRoot()), r.failTask(name, path, d, msg)), k)
				return
			}
			k(task.Unit{}, err)
		})
	}
}

// String describes the master, for logs.
func (m *Master) String() string { return fmt.Sprintf("master %s of %s", m.id, m.sys.Root()) }
