package masterworker_test

import (
	"errors"
	c "github.com/zkflow/zkflow/combinators"
	"math"
	"time"

	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
	"testing"

	"github.com/zkflow/zkflow/fakezk/sim"
)

// System.Resubmit's doc: "it looks for the id first and creates the task
// only if it is not found", and Submit's: a submission is made "under the
// submitter's unique id (unique per submission ...)". The ids "x" and
// "x-" are unique, but Find("x") takes "task-x--0000000000" (submission
// "x-"'s task) for "task-x-" plus the wrapped sequence number
// "-0000000000": Resubmit("x") returns the other submission's name and
// never creates its own task.
func TestAdv4ResubmitFindsAnotherSubmissionsTask(t *testing.T) {
	w := newWorld(t, 1, nil)
	sys := newSys(t, "/mw")
	if _, err := sim.Run(w, 0, sys.Setup()); err != nil {
		t.Fatal(err)
	}
	// An id ending in "-" is refused: its names would start with those
	// of the id without it.
	for _, tk := range []task.Task[string]{sys.Submit("x-", []byte("other")), sys.Resubmit("x-", nil), sys.Find("x-")} {
		if _, err := sim.Run(w, 0, tk); !errors.Is(err, task.ErrInvalidArgument) {
			t.Fatalf("submission id %q: %v, want ErrInvalidArgument", "x-", err)
		}
	}
	// Task names that such an id made (by a submitter of another version,
	// by hand) are not taken for another submission's.
	if err := w.Server.AdminCreate("/mw/tasks/task-x--0000000000", []byte("other"), 0); err != nil {
		t.Fatal(err)
	}
	found, err := sim.Run(w, 0, sys.Find("x"))
	if err != nil {
		t.Fatal(err)
	}
	name, err := sim.Run(w, 0, sys.Resubmit("x", []byte("mine")))
	if err != nil {
		t.Fatal(err)
	}
	if found != "" || name == "task-x--0000000000" {
		t.Errorf("Find(%q) = %q, Resubmit = %q: the task of submission %q taken for %q's", "x", found, name, "x-", "x")
	}
}

// The package doc: "Once the faults stop and a primary and a worker are
// up, every task gets its status", and PROTOCOL.md: the primary's cache
// of /workers "re-arms the watch after every notification". With the
// counter of /workers run out (SetCounters), a registration no longer
// moves the pzxid of /workers, so the child watch whose notification
// went with the primary's connection is not fired again on reconnect
// (SetWatches compares the pzxid). A worker that registers while the
// primary is cut off is never seen: its task stays in /tasks. (The
// primary reads /tasks again after every reconnect for this reason, and
// a worker its assignments; the cache of /workers does not.)
func TestAdv4WorkerRegisteredWhilePrimaryCutOffAtCounterWrap(t *testing.T) {
	w := newWorld(t, 3, nil)
	sys := newSys(t, "/mw")
	if _, err := sim.Run(w, 0, sys.Setup()); err != nil {
		t.Fatal(err)
	}
	if err := w.Server.SetCounters(w.ServerPath(sys.WorkersPath()), 0, math.MaxInt32); err != nil {
		t.Fatal(err)
	}
	m, _ := sys.Master("m")
	wk, _ := sys.Worker("w1", func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
	mo := sim.Submit(w, 0, m.Run())
	w.Drive()
	if !m.Primary() {
		t.Fatal("no primary")
	}
	name, err := sim.Run(w, 2, sys.Submit("a", []byte("a")))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := w.Server.NodeStat(w.ServerPath(sys.WorkersPath()))
	w.Server.Partition(w.Conns[0], 100*time.Millisecond, false)
	wo := sim.Submit(w, 1, wk.Run())
	for i := 0; i < 1000 && !wk.Registered(); i++ {
		w.Step()
	}
	if !wk.Registered() {
		t.Fatal("the worker did not register while the primary was cut off")
	}
	if after, _ := w.Server.NodeStat(w.ServerPath(sys.WorkersPath())); after.Pzxid != before.Pzxid {
		t.Fatalf("the registration moved the pzxid of /workers (%d -> %d): the counter has not run out", before.Pzxid, after.Pzxid)
	}
	o := &sim.Outcome[masterworker.Result]{}
	executor.SubmitWith(w.Execs[2], sys.Wait(name), executor.Options{Deadline: w.Clock.Now().Add(time.Minute)},
		func(r masterworker.Result, err error) { o.V, o.Err, o.Done = r, err, true })
	w.Settle(func() bool { return o.Done })
	if !o.Done || o.Err != nil || string(o.V.Data) != "a" {
		t.Fatalf("task %s once the primary is back and worker w1 is up: %+v (left in /tasks: %v)", name, o, w.Children(sys.TasksPath()))
	}
	if mo.Done || wo.Done {
		t.Fatalf("master or worker ended: %+v %+v", mo, wo)
	}
}

// PROTOCOL.md: "After an empty directory is deleted (an operator cleaning
// up), every participant makes it again where it needs it", and the
// package doc: "Once the faults stop and a primary and a worker are up,
// every task gets its status." An operator deletes the status directory
// while it is empty (no task done yet). The worker's status multi fails
// with no node on its create; writeStatus passes the error on and the
// worker's Run ends with it, its registration left in place (so the
// primary keeps the task assigned to it): the task never gets a status.
func TestAdv4StatusDirDeletedWhileEmpty(t *testing.T) {
	w := newWorld(t, 3, nil)
	sys := newSys(t, "/mw")
	m, _ := sys.Master("m")
	wk, _ := sys.Worker("w1", func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
	mo := sim.Submit(w, 0, m.Run())
	wo := sim.Submit(w, 1, wk.Run())
	w.Drive()
	if !m.Primary() || !wk.Registered() {
		t.Fatalf("primary %v, registered %v", m.Primary(), wk.Registered())
	}
	if err := w.Server.AdminDelete(sys.StatusRoot()); err != nil {
		t.Fatal(err)
	}
	o := &sim.Outcome[masterworker.Result]{}
	executor.SubmitWith(w.Execs[2], c.Then(sys.Submit("a", []byte("a")), sys.Wait),
		executor.Options{Deadline: w.Clock.Now().Add(time.Minute)},
		func(r masterworker.Result, err error) { o.V, o.Err, o.Done = r, err, true })
	w.Settle(func() bool { return o.Done })
	if !o.Done || o.Err != nil || string(o.V.Data) != "a" {
		t.Errorf("task after the empty status directory was deleted: %+v (worker ended: %v %v; assigned: %v)",
			o, wo.Done, wo.Err, w.Children(sys.AssignPath("w1")))
	}
	if mo.Done || wo.Done {
		t.Errorf("master or worker ended: %+v %+v", mo, wo)
	}
}

// The same for the assignment root: an operator deletes /assign while it
// is empty (no worker has come yet, or every dead worker's directory was
// removed). The primary's next round lists /assign, gets no node, and
// the master's Run ends with that error (Serve returns it: no retry), so
// the system has no primary.
func TestAdv4AssignRootDeletedWhileEmpty(t *testing.T) {
	w := newWorld(t, 3, nil)
	sys := newSys(t, "/mw")
	m, _ := sys.Master("m")
	mo := sim.Submit(w, 0, m.Run())
	w.Drive()
	if !m.Primary() {
		t.Fatal("no primary")
	}
	if err := w.Server.AdminDelete(sys.AssignRoot()); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, 2, sys.Submit("a", []byte("a"))); err != nil {
		t.Fatal(err)
	}
	w.Drive()
	if mo.Done || !m.Primary() {
		t.Errorf("the master ended after the empty assignment root was deleted (primary %v): %+v", m.Primary(), mo)
	}
}
