package config

import (
	"errors"
	"fmt"
	"sync"

	"github.com/zkflow/zkflow/internal/canary"
	"github.com/zkflow/zkflow/task"
)

// ErrReloaded is the error a run's scope is canceled with when a new
// configuration replaces the one it runs with.
var ErrReloaded = errors.New("config: reloaded with a new configuration")

// Reloader keeps one run of a component going with the latest
// configuration: on each new version it cancels the running run's scope
// (with ErrReloaded), waits for that run to end, and starts a new run with
// the new configuration. Runs, Done and Err are safe from any goroutine.
type Reloader struct {
	w     *Watcher
	apply func(Snapshot) task.Task[task.Unit]
	rt    task.Runtime

	mu   sync.Mutex
	runs int

	// executor only
	run     *task.Scope // the run going, or nil
	pending *Snapshot   // the configuration to start next
	active  int         // runs started and not ended (at most 1)
	lost    bool        // the last run was ended by a session expiry
	readOn  int64       // the session of the watcher's last consistent read

	done     chan struct{} // closed once the watcher and the last run have ended
	doneOnce bool          // done is closed (executor goroutine)
}

// Reload returns a task that watches root's configuration (WatchDir with
// opts) and runs apply(snapshot) as a flow of its own for each version,
// one run at a time. It succeeds with the Reloader once the first run has
// started, or, under a marker (DirOptions.Marker), once the first
// snapshot has been read: the first run starts when the marker goes.
// Each run of the task starts a Reloader of its own.
//
// A run is the component running with one configuration: apply's task
// runs until it ends by itself (the component is then idle until the next
// version) or its scope is canceled: with ErrReloaded when a newer
// version arrives, task.ErrSessionExpired when the session expires (a new
// run with the latest version starts on the next session, once the
// watcher has read the configuration there and the ended run's cleanups
// have ended), ErrStopped
// on Stop, task.ErrClosed when the executor closes, or the watcher's
// error when the watcher ends on its own (an error no retry settles: the
// Reloader has ended, see Done). Cleanups it registers with Scope.Defer
// run when it ends, but for the executor's close: they then do not run
// their steps, and each is reported to the executor's Config.OnError
// with task.ErrClosed, as every flow's cleanup is (executor.Close); what
// must be let go of on every end, such as something of the process (a
// file, a channel), is let go of when the task gets its scope's error,
// or in Scope.OnDone. The
// run for a new version starts only after the previous run's task and
// those cleanups have ended, so two runs never overlap; versions that arrive while a run is
// ending coalesce to the latest. apply is called on the executor
// goroutine and must not block; a run that fails with an error other than
// its scope's is reported to the executor's error handler.
func Reload(root string, opts DirOptions, apply func(Snapshot) task.Task[task.Unit]) task.Task[*Reloader] {
	if apply == nil {
		return task.Fail[*Reloader](fmt.Errorf("config: nil apply: %w", task.ErrInvalidArgument))
	}
	if _, _, err := newDirWatcher(root, opts, func(Snapshot) {}); err != nil {
		return task.Fail[*Reloader](err)
	}
	return func(s *task.Scope, k task.Cont[*Reloader]) {
		// A Reloader of its own for each run (a task run twice does the
		// work twice, task.Task).
		r := &Reloader{apply: apply, done: make(chan struct{}), rt: s.Runtime()}
		w, start, err := newDirWatcher(root, opts, func(snap Snapshot) {
			r.pending = &snap
			r.next()
		})
		if err != nil {
			k(nil, err)
			return
		}
		task.Run(s, start, func(_ task.Unit, err error) {
			if err != nil {
				k(nil, err)
				return
			}
			r.w = w
			w.onSnapshot = r.resume
			w.onEnd = r.ended
			r.next()
			r.maybeDone() // (the watcher may have ended already)
			k(r, nil)
		})
	}
}

// resume restarts the component after a session expiry ended its run:
// the watcher's first snapshot on the new session brings it back, or the
// run's end if that snapshot came first (the run's cleanups outlasted it).
func (r *Reloader) resume() {
	sess, _ := r.rt.Current()
	r.readOn = sess.ID
	r.restart()
}

// restart starts a run with the watcher's latest configuration if the
// last run was ended by an expiry and none is going or pending.
func (r *Reloader) restart() {
	if r.lost && r.run == nil && r.pending == nil && r.active == 0 {
		if snap, ok := r.w.Latest(); ok {
			r.pending = &snap
			r.next()
		}
	}
}

// next moves towards running the pending configuration: cancel the
// current run (its end calls next again), or start the pending one.
func (r *Reloader) next() {
	if r.pending == nil || r.rt == nil || r.w == nil || r.w.Err() != nil {
		return
	}
	if r.run != nil && !canary.On(bugReloadNoCancel) {
		r.run.Cancel(ErrReloaded)
		return // the run's end starts the next
	}
	snap := *r.pending
	r.pending = nil
	r.lost = false
	run := r.rt.SessionScope().Child()
	r.run = run
	r.active++
	r.mu.Lock()
	r.runs++
	r.mu.Unlock()
	r.rt.Schedule(func() {
		// As task.RunIn, but the run ends only once the cleanups it
		// registered with Scope.Defer have ended too: the next run must
		// not start while they still undo this one's work.
		finished := false
		finish := func(err error) {
			if finished {
				return
			}
			finished = true
			ended := func() {
				r.active--
				if r.run == run {
					r.run = nil
				}
				// Ended by the session's end, whatever the run returned
				// (a run that stops cleanly when its scope ends returns
				// nil): it starts again on the next session.
				r.lost = errors.Is(err, task.ErrSessionExpired) || errors.Is(run.Err(), task.ErrSessionExpired)
				if sess, _ := r.rt.Current(); r.lost && r.readOn == sess.ID {
					// The watcher read the configuration on this
					// session while the cleanups ran: start with it.
					defer r.restart()
				}
				if err != nil && !errors.Is(err, run.Err()) && !errors.Is(err, task.ErrSessionExpired) &&
					!errors.Is(err, task.ErrClosed) {
					r.rt.Report(fmt.Errorf("config: run with version %d: %w", snap.Version(), err))
				}
				r.next()
				r.maybeDone()
			}
			if canary.On(bugReloadOverlapsCleanup) {
				run.Close()
				ended()
				return
			}
			run.CloseAndWait(ended)
		}
		run.OnDone(finish)
		task.Run(run, r.apply(snap), func(_ task.Unit, err error) { finish(err) })
	})
}

// ended is the watcher's end: no run starts any more, the running one is
// canceled with the watcher's error (ErrStopped after Stop), and Done
// closes once it has ended, cleanups included. Executor goroutine.
func (r *Reloader) ended(err error) {
	r.pending = nil
	if r.run != nil {
		r.run.Cancel(err)
	}
	r.maybeDone()
}

// maybeDone closes done once the watcher has ended and no run is going.
// Executor goroutine.
func (r *Reloader) maybeDone() {
	if r.doneOnce || r.w == nil || r.w.Err() == nil || r.active > 0 && !canary.On(bugReloadDoneEarly) {
		return
	}
	r.doneOnce = true
	close(r.done)
}

// Active returns how many runs are going (0 or 1). Executor goroutine.
func (r *Reloader) Active() int { return r.active }

// Runs returns how many runs were started.
func (r *Reloader) Runs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs
}

// Stop returns a task that stops watching and cancels the running run
// (with ErrStopped). It is idempotent.
func (r *Reloader) Stop() task.Task[task.Unit] {
	return func(s *task.Scope, k task.Cont[task.Unit]) {
		task.Run(s, r.w.Stop(), func(_ task.Unit, err error) {
			r.pending = nil
			if r.run != nil {
				r.run.Cancel(ErrStopped)
			}
			k(task.Unit{}, err)
		})
	}
}

// Done is closed when the reloader has ended: its watcher has ended (Stop,
// the executor's close, or an error no retry settles, such as an
// operator's ACL refusing a read), and the run that was going then has
// ended too, cleanups included. A Reloader started again once Done
// closes never runs beside this one's last run.
func (r *Reloader) Done() <-chan struct{} { return r.done }

// Err is nil while the reloader runs, then why it ended.
func (r *Reloader) Err() error { return r.w.Err() }

// Watcher is the watcher the reloader follows its configuration with.
func (r *Reloader) Watcher() *Watcher { return r.w }
