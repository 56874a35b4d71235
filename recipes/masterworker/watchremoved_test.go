package masterworker_test

import (
	"testing"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// settleFor drives the world for d of its clock.
func settleFor(w *sim.World, d time.Duration) {
	until := w.Clock.Now().Add(d)
	w.Settle(func() bool { return !w.Clock.Now().Before(until) })
}

// Wait: "while there is none, it sets an exists watch on /status/<name>
// and reads again when the watch fires ... It fails with ErrBadStatus
// ..., and with the scope's error or task.ErrSessionExpired"; Client.Wait
// "waits for the status of the named task, across session expiries,
// until ctx ends". Another user of the waiter's session takes its watch
// away (RemoveWatches of type Any on the status's path: a cache of that
// node stopping): both faces' Waits failed with task.ErrWatchRemoved
// while the task had no status. They wait on now (a removed watch is one
// more wake-up: read again), and answer with the status once a master
// and a worker run the task. Fails on the code before the fix.
func TestWaitOutlivesAWatchRemovedByAnotherUser(t *testing.T) {
	w, sys := setupWorld(t, sim.Config{Seed: 43, Clients: 3})
	sub := sim.Submit(w, 2, sys.Submit("s", []byte("job")))
	if !w.Settle(func() bool { return sub.Done }) || sub.Err != nil {
		t.Fatalf("submit: %+v", sub)
	}
	name := sub.V
	tf := sim.Submit(w, 2, sys.Wait(name))
	var res masterworker.Result
	var blockingErr error
	blockingDone := false
	w.Go(2, func(a *sim.Actor) {
		cl, err := sys.NewClient(a.Exec(), "c")
		if err != nil {
			blockingErr, blockingDone = err, true
			return
		}
		res, blockingErr = cl.Wait(a.Context(), name)
		blockingDone = true
	})
	w.Drive()
	if tf.Done || blockingDone {
		t.Fatalf("the Waits ended with no status: %+v, %v", tf, blockingErr)
	}
	if _, err := sim.Run(w, 2, task.RemoveWatches(sys.StatusPath(name), task.WatcherAny)); err != nil {
		t.Fatalf("RemoveWatches: %v", err)
	}
	settleFor(w, 10*time.Second)
	if tf.Done || blockingDone {
		t.Fatalf("the Waits ended with no status, after another user of the session removed the watches on its path: task face %v, Client %v (done %v)",
			tf.Err, blockingErr, blockingDone)
	}
	m, _ := sys.Master("m")
	wk, _ := sys.Worker("w", func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
	executor.Submit(w.Execs[0], m.Run(), func(task.Unit, error) {})
	executor.Submit(w.Execs[1], wk.Run(), func(task.Unit, error) {})
	if !w.Settle(func() bool { return tf.Done && blockingDone }) {
		t.Fatal("the Waits did not end once the task was run")
	}
	if tf.Err != nil || string(tf.V.Data) != "job" || blockingErr != nil || string(res.Data) != "job" {
		t.Fatalf("the Waits: task face %+v, Client %+v, %v", tf, res, blockingErr)
	}
}

// Worker.Run: "Once registered, a keeper flow follows the node with an
// exists watch for as long as the session lives", and step 3 waits on a
// child watch of its assignment directory; the worker fails only for an
// error no retry settles, the scope's end or its session's. Another user
// of the worker's session removes the watches on its registration and on
// its assignment directory (RemoveWatches of type Any: a cache of either
// stopping): the worker failed with task.ErrWatchRemoved, and gave its
// registration up, so nothing assigned to it ran. It goes on now (a
// removed watch is one more wake-up: look again), stays registered and
// runs a task submitted afterwards. Fails on the code before the fix.
func TestWorkerOutlivesWatchesRemovedByAnotherUser(t *testing.T) {
	for _, which := range []string{"registration", "assignments"} {
		t.Run(which, func(t *testing.T) {
			w, sys := setupWorld(t, sim.Config{Seed: 44, Clients: 3})
			m, _ := sys.Master("m")
			wk, _ := sys.Worker("w", func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
			executor.Submit(w.Execs[0], m.Run(), func(task.Unit, error) {})
			run := sim.Submit(w, 1, wk.Run())
			if !w.Settle(func() bool { return wk.Registered() }) {
				t.Fatal("the worker did not register")
			}
			w.Drive()
			p := sys.WorkersPath() + "/w"
			if which == "assignments" {
				p = sys.AssignPath("w")
			}
			if _, err := sim.Run(w, 1, task.RemoveWatches(p, task.WatcherAny)); err != nil {
				t.Fatalf("RemoveWatches %s: %v", p, err)
			}
			settleFor(w, 10*time.Second)
			if run.Done || !wk.Registered() {
				t.Fatalf("the worker ended (%v) or is not registered (%v) after another user of its session removed the watches on %s",
					run.Err, wk.Registered(), p)
			}
			res, err := sim.Run(w, 2, doTask(sys, "s", "job"))
			if err != nil || string(res.Data) != "job" {
				t.Fatalf("a task submitted afterwards: %+v, %v", res, err)
			}
		})
	}
}

// doTask submits data with id and waits for its status.
func doTask(sys *masterworker.System, id, data string) task.Task[masterworker.Result] {
	return func(s *task.Scope, k task.Cont[masterworker.Result]) {
		task.Run(s, sys.Submit(id, []byte(data)), func(name string, err error) {
			if err != nil {
				k(masterworker.Result{}, err)
				return
			}
			task.Run(s, sys.Wait(name), k)
		})
	}
}

// Worker.Run, step 2: a node of another session at the registration's
// path means "wait for it to go with an exists watch, then create
// again"; "ErrWorkerTaken is returned only if that wait is cut short
// (the scope ends)". Another user of the worker's session removes that
// watch (RemoveWatches of type Any): Run failed with ErrWorkerTaken. It
// waits on now, and registers once the node is deleted. Fails on the
// code before the fix.
func TestWorkerWaitingForItsNodeOutlivesAWatchRemoved(t *testing.T) {
	w, sys := setupWorld(t, sim.Config{Seed: 45, Clients: 3})
	reg := sys.WorkersPath() + "/w"
	if err := w.Server.AdminCreate(reg, []byte("operator"), 0); err != nil {
		t.Fatal(err)
	}
	wk, _ := sys.Worker("w", func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
	run := sim.Submit(w, 1, wk.Run())
	w.Drive()
	if _, err := sim.Run(w, 1, task.RemoveWatches(reg, task.WatcherAny)); err != nil {
		t.Fatalf("RemoveWatches %s: %v", reg, err)
	}
	settleFor(w, 10*time.Second)
	if run.Done || wk.Registered() {
		t.Fatalf("the worker ended (%v) or registered (%v) while the operator's node is there", run.Err, wk.Registered())
	}
	if err := w.Server.AdminDelete(reg); err != nil {
		t.Fatal(err)
	}
	if !w.Settle(func() bool { return wk.Registered() }) || run.Done {
		t.Fatalf("the worker did not register once the node was deleted: %+v", run)
	}
}

// Package doc: "run several: one primary, the others wait"; Master.Run
// "campaigns again" while its session lives, and Serve returns only when
// ctx ends or for an error a retry cannot settle. Another user of a
// backup's session removes its watch on the master node (RemoveWatches
// of type Any: a cache of the node stopping): the backup's Run failed
// with task.ErrWatchRemoved (recipes/election's Campaign fails with it),
// so when the primary went there was no one to take over and no task
// was assigned. The backup campaigns again now, takes over once the
// primary is gone and serves. Fails on the code before the fix.
func TestBackupMasterOutlivesAWatchRemoved(t *testing.T) {
	w, sys := setupWorld(t, sim.Config{Seed: 46, Clients: 4})
	m0, _ := sys.Master("m0")
	m1, _ := sys.Master("m1")
	r0 := sim.Submit(w, 0, m0.Run())
	if !w.Settle(func() bool { return m0.Primary() }) {
		t.Fatal("no primary")
	}
	r1 := sim.Submit(w, 1, m1.Run())
	w.Drive()
	p := sys.Root() + "/master"
	if _, err := sim.Run(w, 1, task.RemoveWatches(p, task.WatcherAny)); err != nil {
		t.Fatalf("RemoveWatches %s: %v", p, err)
	}
	settleFor(w, 10*time.Second)
	if r1.Done {
		t.Fatalf("the backup's Run ended after another user of its session removed its watch on %s: %v", p, r1.Err)
	}
	w.Execs[0].Close() // the primary's process ends: its session with it
	if !w.Settle(func() bool { return m1.Primary() }) {
		t.Fatalf("the backup did not take over: %+v, %+v", r0, r1)
	}
	wk, _ := sys.Worker("w", func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
	sim.Submit(w, 2, wk.Run())
	res, err := sim.Run(w, 3, doTask(sys, "s", "job"))
	if err != nil || string(res.Data) != "job" {
		t.Fatalf("a task submitted afterwards: %+v, %v", res, err)
	}
}
