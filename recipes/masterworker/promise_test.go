package masterworker_test

// Promises of the package's docs that an adversarial review found broken:
// each test's comment gives the promise and the schedule that broke it
// (every test here fails on the code before the fix).

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	c "github.com/zkflow/zkflow/combinators"
	"github.com/zkflow/zkflow/executor"
	"github.com/zkflow/zkflow/fakezk"
	"github.com/zkflow/zkflow/fakezk/sim"
	"github.com/zkflow/zkflow/recipes/masterworker"
	"github.com/zkflow/zkflow/task"
)

// submissionNodes lists every node of submission id in /tasks, the
// assignment directories and /status (server paths as the client sees them).
func submissionNodes(w *sim.World, sys *masterworker.System, id string) []string {
	var found []string
	dirs := []string{sys.TasksPath(), sys.StatusRoot()}
	for _, a := range w.Children(sys.AssignRoot()) {
		dirs = append(dirs, sys.AssignRoot()+"/"+a)
	}
	for _, d := range dirs {
		for _, n := range w.Children(d) {
			if strings.HasPrefix(n, "task-"+id+"-") {
				found = append(found, d+"/"+n)
			}
		}
	}
	return found
}

// The package doc: "a submission whose reply was lost is not made twice";
// Resubmit: "it looks for the id first and creates the task only if it is
// not found"; Find: "succeeds with its name, or with "" if it is in none
// of them"; PROTOCOL.md: "After an empty directory is deleted (an
// operator cleaning up), every participant makes it again where it needs
// it" (and the simulation deletes /assign while empty).
//
// Schedule: a task goes through (submitted, assigned, done: its status
// is written); its worker's session expires and the primary deletes the
// worker's empty assignment directory, leaving /assign empty; an
// operator deletes the empty /assign. Then the submitter, unsure whether
// its submission was made (a lost reply, a restart), calls Resubmit with
// the same id. Find's listing of /assign fails with no node; Find fails
// with ErrNoNode before it lists /status, and submit takes that error for
// "not found": the task is created a second time.
func TestResubmitAfterEmptyAssignRootDeleted(t *testing.T) {
	w := newWorld(t, 3, nil)
	sys := newSys(t, "/mw")
	m, _ := sys.Master("m")
	wk, _ := sys.Worker("w1", func(j masterworker.Job) task.Task[[]byte] { return task.Value(j.Data) })
	mo := sim.Submit(w, 0, m.Run())
	sim.Submit(w, 1, wk.Run())
	if !w.Settle(func() bool { return m.Primary() && wk.Registered() }) {
		t.Fatal("no primary or no worker")
	}
	name, err := sim.Run(w, 2, sys.Submit("c_1", []byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := sim.Run(w, 2, sys.Wait(name)); err != nil || string(res.Data) != "x" {
		t.Fatalf("Wait: %+v %v", res, err)
	}
	// The worker dies; the primary removes its (empty) assignment directory.
	w.Server.Expire(w.Conns[1])
	w.Settle(func() bool { return len(w.Children(sys.AssignRoot())) == 0 })
	if got := w.Children(sys.AssignRoot()); len(got) != 0 {
		t.Fatalf("assignment directories left: %v", got)
	}
	// An operator cleans up the empty /assign.
	if err := w.Server.AdminDelete(sys.AssignRoot()); err != nil {
		t.Fatal(err)
	}
	found, ferr := sim.Run(w, 2, sys.Find("c_1"))
	again, rerr := sim.Run(w, 2, sys.Resubmit("c_1", []byte("x")))
	tasks := submissionNodes(w, sys, "c_1")
	if ferr != nil || found != name {
		t.Errorf("Find(c_1) = %q, %v; want %q (its status is there)", found, ferr, name)
	}
	if rerr != nil || again != name || len(tasks) != 1 {
		t.Errorf("Resubmit(c_1) = %q, %v; want %q; submission c_1 now has %d tasks: %v", again, rerr, name, len(tasks), tasks)
	}
	if mo.Done {
		t.Logf("master ended: %v", mo.Err)
	}
}

// maxSubmitData is the largest data a Submit with id "c_1" under /mw
// gets through (task.MaxDataSize's doc: 1,048,526 bytes for a create at
// "/a", one byte less for each further byte of path; the create is sent
// at /mw/tasks/task-c_1-).
const maxSubmitData = 1048526 - (len("/mw/tasks/task-c_1-") - len("/a"))

// The package doc: "Once the faults stop and a primary and a worker are
// up, every task gets its status", with Submit's errors: "task.
// ErrDataTooLarge for data over the server's limit" (so data Submit takes
// is a task), and Master.Run: "It does not end on its own".
//
// Schedule: a primary and a worker are up; a client submits data just
// under the limit (Submit succeeds: the task is in /tasks). The primary's
// assignment multi carries the same data with a longer path, a lease
// check and a delete: the connection refuses it with ErrDataTooLarge.
// settle passes that error on, the term fails, and Master.Run ends with
// it (the master resigns). A backup that takes over reads the same task
// and ends the same way: one accepted submission ends every master, and
// no task gets a status any more.
func TestSubmissionAtTheLimitFailsItsTask(t *testing.T) {
	w := newWorld(t, 4, nil)
	sys := newSys(t, "/mw")
	m1, _ := sys.Master("m1")
	m2, _ := sys.Master("m2")
	wk, _ := sys.Worker("w1", func(j masterworker.Job) task.Task[[]byte] { return task.Value([]byte("ok")) })
	mo1 := sim.Submit(w, 0, m1.Run())
	wo := sim.Submit(w, 1, wk.Run())
	if !w.Settle(func() bool { return m1.Primary() && wk.Registered() }) {
		t.Fatal("no primary or no worker")
	}
	mo2 := sim.Submit(w, 3, m2.Run()) // the backup
	w.Drive()
	// One byte more is refused by Submit: this is the largest it takes.
	if _, err := sim.Run(w, 2, sys.Submit("c_1", make([]byte, maxSubmitData+1))); !errors.Is(err, task.ErrDataTooLarge) {
		t.Fatalf("Submit of %d bytes: %v, want ErrDataTooLarge", maxSubmitData+1, err)
	}
	name, err := sim.Run(w, 2, sys.Submit("c_1", make([]byte, maxSubmitData)))
	if err != nil {
		t.Fatalf("Submit of %d bytes: %v", maxSubmitData, err)
	}
	o := &sim.Outcome[masterworker.Result]{}
	executor.SubmitWith(w.Execs[2], sys.Wait(name), executor.Options{Deadline: w.Clock.Now().Add(time.Minute)},
		func(r masterworker.Result, err error) { o.V, o.Err, o.Done = r, err, true })
	w.Settle(func() bool { return o.Done || (mo1.Done && mo2.Done) })
	if mo1.Done || mo2.Done {
		t.Errorf("a submission Submit accepted ended the masters: m1 %v (%v), m2 %v (%v)", mo1.Done, mo1.Err, mo2.Done, mo2.Err)
	}
	w.Settle(func() bool { return o.Done })
	if !o.Done || o.Err != nil {
		t.Errorf("task %s (%d bytes) with a worker up: %+v (still in /tasks: %v; worker ended %v)",
			name, maxSubmitData, o.Err, w.Children(sys.TasksPath()), wo.Done)
	}
}

// Handler's doc: a handler "succeeds with the value to write to its
// status, or fails (the failure is written to the status, except for
// task.ErrSessionExpired, task.ErrClosed and task.ErrCanceled, which stop
// the worker instead ...)", and the package doc: "Once the faults stop and
// a primary and a worker are up, every task gets its status".
//
// Schedule: a primary and two workers are up; a handler succeeds with a
// value the status node cannot hold (over task.MaxDataSize). The status
// multi fails with ErrDataTooLarge; writeStatus passes the error on and
// the worker's Run ends with it (deregistering). The primary moves the
// task back and assigns it to the other worker, whose Run ends the same
// way: one task stops every worker, and it never gets a status (neither
// its value nor a failure).
func TestHandlerValueOverTheLimitFailsItsTask(t *testing.T) {
	w := newWorld(t, 4, nil)
	sys := newSys(t, "/mw")
	m, _ := sys.Master("m")
	big := func(j masterworker.Job) task.Task[[]byte] {
		if string(j.Data) == "big" {
			return task.Value(bytes.Repeat([]byte("v"), task.MaxDataSize+10))
		}
		return task.Value(j.Data)
	}
	wk1, _ := sys.Worker("w1", big)
	wk2, _ := sys.Worker("w2", big)
	mo := sim.Submit(w, 0, m.Run())
	wo1 := sim.Submit(w, 1, wk1.Run())
	wo2 := sim.Submit(w, 3, wk2.Run())
	if !w.Settle(func() bool { return m.Primary() && wk1.Registered() && wk2.Registered() }) {
		t.Fatal("no primary or no workers")
	}
	o := &sim.Outcome[masterworker.Result]{}
	executor.SubmitWith(w.Execs[2], c.Then(sys.Submit("c_1", []byte("big")), sys.Wait),
		executor.Options{Deadline: w.Clock.Now().Add(time.Minute)},
		func(r masterworker.Result, err error) { o.V, o.Err, o.Done = r, err, true })
	w.Settle(func() bool { return o.Done })
	if !o.Done || o.Err != nil {
		t.Errorf("task whose handler's value is over the limit: no status: %v", o.Err)
	}
	if wo1.Done || wo2.Done {
		t.Errorf("the workers ended: w1 %v (%v), w2 %v (%v)", wo1.Done, wo1.Err, wo2.Done, wo2.Err)
	}
	if mo.Done {
		t.Errorf("master ended: %v", mo.Err)
	}
}

// The same promise ("a submission whose reply was lost is not made
// twice"; Resubmit "creates the task only if it is not found") with the
// status directory deleted while empty (the simulation's EmptyDir class
// on /status: no task done yet). The task sits with a dead worker; while
// Find reads the assignment directories, a primary moves it back to
// /tasks. Find's listing of /status fails with no node, so Find ends with
// ErrNoNode before it lists /tasks again (which would have found the task
// moved back), and submit takes that for "not found": a second task.
func TestResubmitAfterEmptyStatusDirDeleted(t *testing.T) {
	var h *hookConn
	w := newWorld(t, 1, func(i int, conn *fakezk.Conn) task.Conn {
		h = &hookConn{Conn: conn}
		return h
	})
	sys := newSys(t, "/mw")
	if _, err := sim.Run(w, 0, sys.Setup()); err != nil {
		t.Fatal(err)
	}
	name := "task-a-0000000000"
	for _, p := range []string{sys.AssignPath("w2"), sys.AssignPath("w2") + "/" + name} {
		if err := w.Server.AdminCreate(p, []byte("a"), 0); err != nil {
			t.Fatal(err)
		}
	}
	// An operator removes the empty /status.
	if err := w.Server.AdminDelete(sys.StatusRoot()); err != nil {
		t.Fatal(err)
	}
	// A primary moves the task back to /tasks while Find reads w2's directory.
	h.match = func(req task.Request) bool {
		r, ok := req.(*task.GetChildrenRequest)
		return ok && r.Path == sys.AssignPath("w2")
	}
	h.hook = func() {
		if err := w.Server.AdminDelete(sys.AssignPath("w2") + "/" + name); err != nil {
			t.Error(err)
		}
		if err := w.Server.AdminCreate(sys.TasksPath()+"/"+name, []byte("a"), 0); err != nil {
			t.Error(err)
		}
	}
	got, err := sim.Run(w, 0, sys.Resubmit("a", []byte("a")))
	if !h.fired {
		t.Fatal("the task was not moved during Find: the test checks nothing")
	}
	if tasks := submissionNodes(w, sys, "a"); err != nil || got != name || len(tasks) != 1 {
		t.Fatalf("Resubmit = %q, %v; want %q (moved back to /tasks); submission a has %d tasks: %v", got, err, name, len(tasks), tasks)
	}
}

// Bad input on the blocking face: a Client not made by NewClient (nil,
// or the zero value). Submit on the zero value is refused with a typed
// error (the executor's ErrNilExecutor), but Wait on the same zero value,
// and every method on a nil *Client, panic with a nil dereference. (No
// sentence of this package promises it; the sibling recipes' Clients,
// group's and barrier's, refuse both with task.ErrInvalidArgument.)
func TestNilOrZeroClient(t *testing.T) {
	ctx := context.Background()
	try := func(name string, f func() error) {
		t.Helper()
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("%s: panic %v, want a typed error", name, r)
			}
		}()
		if err := f(); err == nil {
			t.Errorf("%s: nil error", name)
		}
	}
	try("zero Client.Submit", func() error { _, err := (&masterworker.Client{}).Submit(ctx, nil); return err })
	try("zero Client.Wait", func() error { _, err := (&masterworker.Client{}).Wait(ctx, "task-c_1-0000000000"); return err })
	try("nil Client.Submit", func() error { _, err := (*masterworker.Client)(nil).Submit(ctx, nil); return err })
	try("nil Client.Wait", func() error { _, err := (*masterworker.Client)(nil).Wait(ctx, "task-c_1-0000000000"); return err })
}
