package masterworker

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/recipes/internal/zkops"
	"github.com/zkflow/zkflow/task"
)

// Worker registers under /workers, executes the tasks assigned to it and
// writes their status.
type Worker struct {
	sys *System
	id  string
	h   Handler
	// Its registration's and assignment directory's paths, made once.
	reg, assign string

	registered atomic.Bool
	done       atomic.Int64
}

// Worker returns a worker named id that runs h for every task assigned to
// it. The id is the worker's registration (/workers/<id>) and assignment
// directory (/assign/<id>); two live workers may not share it.
func (sys *System) Worker(id string, h Handler) (*Worker, error) {
	if err := checkName("worker id", id); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("masterworker: nil handler: %w", task.ErrInvalidArgument)
	}
	w := &Worker{sys: sys, id: id, h: h}
	if sys != nil {
		w.reg, w.assign = sys.WorkersPath()+"/"+id, sys.AssignPath(id)
	}
	return w, nil
}

// ID is the worker's id.
func (w *Worker) ID() string { return w.id }

// Registered reports whether the worker's registration is in place on its
// current session (safe from any goroutine).
func (w *Worker) Registered() bool { return w.registered.Load() }

// Completed is how many statuses this worker wrote and was told so (safe
// from any goroutine): a status whose write's reply was lost is not
// counted, though it may have been applied (its retry finds it there,
// and cannot tell it from another's).
func (w *Worker) Completed() int64 { return w.done.Load() }

// Run returns a task that sets up the layout, creates /assign/<id>,
// registers /workers/<id> and then executes assigned tasks, one at a
// time, until the scope ends. It fails with the scope's error, with
// task.ErrSessionExpired when the session ends (the registration went
// with it; run it again on the new session, as Serve does), with the
// error of a handler that failed with task.ErrSessionExpired, ErrClosed
// or ErrCanceled, or with an error a retry cannot settle. Unless the
// session ended, a Run that fails deletes the registration first if its
// session owns it (by a flow of its own when the scope has ended), so a
// worker that no longer serves is not assigned tasks while its session
// lives on, and the primary moves those it had back at once. A Run of the
// same worker id started again on the same executor (Serve again, or Run
// again by hand) waits for those deletes to end before it registers: a
// late one would delete the registration the new Run has made or adopted
// (it is our session's node), and the primary would move away the tasks
// the new Run is executing.
func (w *Worker) Run() task.Task[task.Unit] {
	body := task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
		r := &wrun{w: w, s: s, k: k, sess: s.Session()}
		unsub := s.Subscribe(r.onEvent)
		s.OnDone(func(error) {
			unsub()
			w.registered.Store(false)
		})
		r.start()
	})
	// The give-ups of earlier Runs of this registration on this runtime
	// end first (afterGiveUps).
	return c.Seq(c.Seq(afterGiveUps(w.regPath()), w.sys.Setup()), task.Task[task.Unit](func(s *task.Scope, k task.Cont[task.Unit]) {
		// The run's two flows (assignments, keeper) run in a child scope,
		// closed when the first fails, so that neither registers again
		// while the registration is given up.
		task.RunIn(s.Child(), body, func(_ task.Unit, err error) {
			w.registered.Store(false)
			owner := s.Session().ID
			switch {
			case (errors.Is(err, task.ErrSessionExpired) || errors.Is(err, task.ErrClosed)) && (sessionEnded(s) || canary.On(bugHandlerSessionErrorKeepsWorker)):
				// The session ended: the registration went with it. (A
				// handler's ErrSessionExpired or ErrClosed, from
				// something else it uses, stops the worker while the
				// session lives: the registration is given up below.)
				k(task.Unit{}, err)
			case s.Err() != nil:
				// Canceled or past its deadline: the registration is
				// given up by a flow of its own (nothing starts in an
				// ended scope), so the primary moves our tasks back now
				// rather than when the session ends. It is counted
				// until it ends: a Run started again meanwhile waits
				// for it (afterGiveUps).
				w.giveUp(s, owner, true, nil)
				k(task.Unit{}, err)
			default:
				// Run fails while the session lives: a worker that no
				// longer serves must not stay registered. The delete
				// is a flow of its own too, counted the same way, so
				// that a scope that ends while we wait for it does not
				// cut it short; we wait for it unless the scope ends.
				task.Suspend(s, func(task.Unit, error) { k(task.Unit{}, err) }, func(resume task.Cont[task.Unit]) func() {
					w.giveUp(s, owner, false, func() { resume(task.Unit{}, nil) })
					return nil
				})
			}
		})
	}))
}

// sessionEnded reports whether the session s is bound to has ended
// (expired or closed), as against an error that only says so. Executor
// goroutine.
func sessionEnded(s *task.Scope) bool {
	if err := s.Err(); errors.Is(err, task.ErrSessionExpired) || errors.Is(err, task.ErrClosed) {
		return true
	}
	cur, st := s.Current()
	return cur.Epoch != s.Session().Epoch || st == task.StateExpired || st == task.StateClosed
}

// giveUps counts, per registration path, the give-ups of Runs that
// ended (the deletes of their registrations, flows of their own) still
// running on one runtime (task.RuntimeValue; executor goroutine only).
// A Run of the same path on the same runtime waits until none is left
// before it registers (afterGiveUps): the give-up deletes the node if
// our session owns it, and a Run served again on the same session makes
// or adopts a node our session owns, so a give-up that comes after it
// (its read or its delete held up by a connection loss, then retried)
// would delete the new Run's registration, the primary would move the
// tasks the new Run is executing to another worker, and each would run
// them (TestWorkerServedAgainKeepsItsRegistration). A delete an ACL
// refuses goes on in the background (zkops.KeepDeleting) as the give-up
// ends, uncounted, as a StartCleanup's does.
type giveUps map[string]*giveUpWait

type giveUpWait struct {
	n       int
	waiters []func()
}

var giveUpsKey byte

func giveUpsOf(rt task.Runtime) giveUps {
	return task.RuntimeValue(rt, &giveUpsKey, func() giveUps { return giveUps{} })
}

// giveUp starts the delete of the registration, if session owner owns
// it, as a flow of its own (task.Go: bound to the session current now,
// to no deadline), counted on the runtime until it ends; then its error,
// if report, goes to the runtime's error report, and done, if not nil,
// is scheduled. Executor goroutine.
func (w *Worker) giveUp(s *task.Scope, owner int64, report bool, done func()) {
	rt, path := s.Runtime(), w.regPath()
	gs := giveUpsOf(rt)
	g := gs[path]
	if g == nil {
		g = &giveUpWait{}
		gs[path] = g
	}
	g.n++
	task.Go(s, zkops.DeleteOwned(path, owner), func(_ task.Unit, err error) {
		if g.n--; g.n == 0 {
			delete(gs, path)
			for _, wake := range g.waiters {
				rt.Schedule(wake)
			}
			g.waiters = nil
		}
		if err != nil && report {
			rt.Report(err)
		}
		if done != nil {
			rt.Schedule(done)
		}
	})
}

// afterGiveUps waits until no give-up of a registration at path is
// running on the flow's runtime.
func afterGiveUps(path string) task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		g := giveUpsOf(s.Runtime())[path]
		if g == nil {
			k(task.Unit{}, nil)
			return
		}
		task.Suspend(s, k, func(resume task.Cont[task.Unit]) func() {
			g.waiters = append(g.waiters, func() { resume(task.Unit{}, nil) })
			return nil
		})
	}
}

type wrun struct {
	w    *Worker
	s    *task.Scope
	k    task.Cont[task.Unit]
	sess task.Session

	// Two flows run in s once registered: the assignments' (list) and
	// the registration's keeper (keep). The first to fail ends the run.
	ended   bool
	listing bool // the assignments' flow has started

	// The assignments' flow lists again after every reconnect (see
	// onEvent): gen numbers its listings, parked says the current one
	// waits for its watch, relist that a reconnect came meanwhile.
	gen     int
	parked  bool
	relist  bool
	blinked bool // suspended since the last reconnect

	listW task.Task[task.ChildrenWatch] // the assignments' listing, retried: made once
}

// onEvent follows the session: once the counter of the assignment
// directory has run out, a create under it no longer moves its pzxid, and
// the server, which compares the pzxid on reconnect, does not fire again
// a child watch whose notification went with the connection. So after
// every reconnect the assignments are listed again. Executor goroutine.
func (r *wrun) onEvent(ev task.Event) {
	switch ev.State {
	case task.StateSuspended:
		r.blinked = true
	case task.StateConnected:
		if !r.blinked || r.ended {
			return
		}
		r.blinked = false
		r.relist = true
		if r.parked {
			r.list() // the parked listing's wait is dropped (its gen is old)
		}
	}
}

func (r *wrun) fail(err error) {
	if r.ended {
		return // the other flow ended the run already
	}
	r.ended = true
	r.w.registered.Store(false)
	task.Resume(r.s, r.k, task.Unit{}, err)
}

func (r *wrun) regPath() string { return r.w.regPath() }

func (w *Worker) regPath() string {
	if w.reg != "" {
		return w.reg
	}
	return w.sys.WorkersPath() + "/" + w.id
}

// assignPath is the worker's assignment directory.
func (w *Worker) assignPath() string {
	if w.assign != "" {
		return w.assign
	}
	return w.sys.AssignPath(w.id)
}

// start creates the assignment directory first, so that the master never
// sees a registered worker without one.
func (r *wrun) start() {
	task.Run(r.s, r.w.sys.mkdir(r.w.assignPath()), func(_ task.Unit, err error) {
		if err != nil {
			r.fail(err)
			return
		}
		r.register()
	})
}

// register creates the ephemeral /workers/<id>. Node-exists and a lost
// reply are settled by reading the node: ours (a create whose reply was
// lost) means registered; another session's means wait for it to go
// (a previous incarnation whose session has not yet expired, or a node an
// operator made there).
func (r *wrun) register() {
	p := r.regPath()
	task.Run(r.s, zkops.Create(p, nil, task.Ephemeral, r.w.sys.acl), func(_ string, err error) {
		switch {
		case err == nil:
			r.registeredNow(nil)
		case errors.Is(err, task.ErrNodeExists), errors.Is(err, task.ErrConnectionLoss):
			task.Run(r.s, c.Retry(task.ExistsW(p), retry), func(sw task.StatWatch, err error) {
				switch {
				case err != nil:
					r.fail(err)
				case sw.Stat == nil:
					r.register()
				case sw.Stat.EphemeralOwner == r.sess.ID:
					r.registeredNow(sw.Watch)
				default:
					task.Run(r.s, sw.Watch.Wait(), func(_ task.Event, err error) {
						if err != nil && !errors.Is(err, task.ErrWatchRemoved) {
							r.fail(fmt.Errorf("%w: %s: %w", ErrWorkerTaken, p, err))
							return
						}
						r.register()
					})
				}
			})
		case errors.Is(err, task.ErrNotSent):
			r.register()
		case errors.Is(err, task.ErrNoNode) && !canary.On(bugNoDirAgain):
			// /workers was deleted while empty (an operator cleaning
			// up): make it again and register.
			task.Run(r.s, r.w.sys.mkdir(r.w.sys.WorkersPath()), func(_ task.Unit, err error) {
				if err != nil {
					r.fail(err)
					return
				}
				r.register()
			})
		default:
			r.fail(err)
		}
	})
}

// registeredNow starts the assignments' flow (once per run) and the
// keeper of the registration; w, if not nil, is a watch on our
// registration node, set by the read that found it ours.
func (r *wrun) registeredNow(w *task.Watch) {
	r.w.registered.Store(true)
	if !r.listing {
		r.listing = true
		r.list()
	}
	if w != nil {
		r.await(w)
		return
	}
	r.keep()
}

// keep watches our registration while the session lives: exists with a
// watch on /workers/<id>. Ours: wait for the watch, then look again. A
// watch another user of the session took away (RemoveWatches: a cache of
// the node stopping) is one more wake-up, here, while registering and in
// list: look again.
// Gone (an operator deleted it), or not ours (deleted and created again
// by someone else): not registered any more, so register again, through
// start (the assignment directory first, as at the start; a master may
// have removed it while we were not registered). Meanwhile the
// assignments' flow goes on: whatever is still assigned to us is ours
// to run, and a task the master moved away fails our multi harmlessly.
func (r *wrun) keep() {
	task.Run(r.s, c.Retry(task.ExistsW(r.regPath()), retry), func(sw task.StatWatch, err error) {
		switch {
		case err != nil:
			r.fail(err)
		case sw.Stat == nil || sw.Stat.EphemeralOwner != r.sess.ID:
			r.w.registered.Store(false)
			r.start()
		default:
			r.await(sw.Watch)
		}
	})
}

func (r *wrun) await(w *task.Watch) {
	task.Run(r.s, w.Wait(), func(_ task.Event, err error) {
		if err != nil && !errors.Is(err, task.ErrWatchRemoved) {
			r.fail(err)
			return
		}
		r.keep()
	})
}

// list reads the assignments with a child watch, executes them in name
// order, then waits for the watch and lists again.
func (r *wrun) list() {
	r.gen++
	gen := r.gen
	r.parked, r.relist = false, false
	if r.listW == nil {
		r.listW = c.Retry(task.ChildrenW(r.w.assignPath()), retry)
	}
	task.Run(r.s, r.listW, func(cw task.ChildrenWatch, err error) {
		if errors.Is(err, task.ErrNoNode) {
			// A primary whose list of workers predates our registration
			// took the directory for a dead worker's and deleted it.
			task.Run(r.s, r.w.sys.mkdir(r.w.assignPath()), func(_ task.Unit, err error) {
				if err != nil {
					r.fail(err)
					return
				}
				r.list()
			})
			return
		}
		if err != nil {
			r.fail(err)
			return
		}
		names := slices.Clone(cw.Names)
		slices.Sort(names)
		ts := make([]task.Task[task.Unit], len(names))
		for i, n := range names {
			ts[i] = r.execute(n)
		}
		task.Run(r.s, seqAll(ts), func(_ task.Unit, err error) {
			if err != nil {
				r.fail(err)
				return
			}
			if r.relist {
				r.list() // reconnected meanwhile: the watch may never fire
				return
			}
			r.parked = true
			task.Run(r.s, cw.Watch.Wait(), func(_ task.Event, err error) {
				if r.gen != gen {
					return // a reconnect started another listing
				}
				r.parked = false
				if err != nil && !errors.Is(err, task.ErrWatchRemoved) {
					r.fail(err)
					return
				}
				r.list()
			})
		})
	})
}

// execute reads one assignment, runs the handler and writes the status
// with one multi that also deletes the assignment. See the package
// documentation for what happens on each error.
func (r *wrun) execute(name string) task.Task[task.Unit] {
	assigned := r.w.assignPath() + "/" + name
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Run(s, c.Retry(task.Get(assigned), retry), func(d task.Data, err error) {
			if errors.Is(err, task.ErrNoNode) {
				k(task.Unit{}, nil) // moved away (we were thought dead) or done
				return
			}
			if err != nil {
				k(task.Unit{}, err)
				return
			}
			task.Run(s, r.w.h(Job{Name: name, Data: d.Data}), func(v []byte, err error) {
				res := Result{Data: v}
				if err != nil {
					if errors.Is(err, task.ErrSessionExpired) || errors.Is(err, task.ErrClosed) || errors.Is(err, task.ErrCanceled) && !canary.On(bugCanceledHandlerWritesStatus) || s.Err() != nil {
						k(task.Unit{}, err)
						return
					}
					res = Result{Data: []byte(err.Error()), Failed: true}
				}
				task.Run(s, r.writeStatus(assigned, name, res), k)
			})
		})
	}
}

// writeStatus creates /status/<name> and deletes the assignment in one
// multi, retried after connection loss: the retry of an applied multi
// fails on the missing assignment (or the existing status), which says
// it was done. A multi that fails because the assignment is gone (the
// master moved the task back) writes nothing: the task runs again
// elsewhere and that run writes the one status.
// shortStatus bounds the failed status that stands for a value or an
// error's message over the server's limit (writeStatus).
const shortStatus = 1024

// bugLongErrorEndsWorker: a handler's error whose message is over the
// server's limit is passed on by writeStatus instead of written as a
// short failed status: every worker the task is given to ends.
const bugLongErrorEndsWorker canary.Name = "masterworker/long-error-ends-worker"

func (r *wrun) writeStatus(assigned, name string, res Result) task.Task[task.Unit] {
	status := r.w.sys.StatusPath(name)
	multi := task.Multi(
		&task.CreateRequest{Path: status, Data: encodeResult(res), Mode: task.Persistent, ACL: r.w.sys.acl.For(status)},
		&task.DeleteRequest{Path: assigned, Version: task.AnyVersion},
	)
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Run(s, c.Retry(multi, retry), func(_ []task.MultiResult, err error) {
			if err == nil {
				r.w.done.Add(1)
				k(task.Unit{}, nil)
				return
			}
			var me *task.MultiError
			switch {
			case errors.As(err, &me) && me.Index == 1 && errors.Is(err, task.ErrNoNode):
				k(task.Unit{}, nil) // moved away, or our own multi applied before a lost reply
			case errors.As(err, &me) && me.Index == 0 && errors.Is(err, task.ErrNoNode) && !canary.On(bugNoDirAgain):
				// The status directory was deleted while empty (an
				// operator cleaning up): make it again and write.
				task.Run(s, c.Seq(r.w.sys.mkdir(r.w.sys.StatusRoot()), r.writeStatus(assigned, name, res)), k)
			case errors.Is(err, task.ErrDataTooLarge) && (!res.Failed || len(res.Data) > shortStatus && !canary.On(bugLongErrorEndsWorker)):
				// The handler's value, or its error's message, is over the
				// server's limit (refused before it was sent): the task
				// fails with a short status saying so, or it would end
				// every worker it is given to. (The short status fits:
				// the recursion ends.)
				what := "result"
				if res.Failed {
					what = "error's message"
				}
				msg := fmt.Sprintf("masterworker: task %s: its %s (%d bytes) is over the server's limit", name, what, len(res.Data))
				task.Run(s, r.writeStatus(assigned, name, Result{Data: []byte(msg), Failed: true}), k)
			case errors.As(err, &me) && me.Index == 0 && errors.Is(err, task.ErrNodeExists):
				// A status exists already: the assignment is stale. Drop it.
				del := c.Catch(c.Retry(task.Delete(assigned, task.AnyVersion), retry), func(err error) task.Task[task.Unit] {
					if errors.Is(err, task.ErrNoNode) {
						return task.Done
					}
					return task.Fail[task.Unit](err)
				})
				task.Run(s, del, k)
			default:
				k(task.Unit{}, err)
			}
		})
	}
}
